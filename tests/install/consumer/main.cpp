// Builds against the installed package only: <fx/fx.hpp> and fx::fx.
#include <fx/clock.hpp>
#include <fx/fx.hpp>
#include <fx/recovery/ulfm.hpp>

#include <cstdio>

int main() {
  const double t0 = fx::now();
  const double t1 = fx::now();
  std::printf("fx consumer: ulfm compiled %s, clock monotonic %s\n", fx::ulfm::compiled() ? "yes" : "no",
              t1 >= t0 ? "yes" : "no");
  return t1 >= t0 ? 0 : 1;
}
