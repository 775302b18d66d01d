#pragma once
// Every rank that was there from the start must have seen the same TryBlock
// outcomes (a recruited spare only has those after it joined).
#include <fx/fx.hpp>

#include <cstdint>
#include <string>

namespace tryblock_test {

// The log as text, one outcome a line. Collective over ctx.comm(): rank 0
// throws if an original rank's log differs from its own.
inline std::string check_same_log(fx::Context& ctx) {
  std::string text;
  for (const auto& o : fx::try_log(ctx)) text += o.name + ": " + o.describe() + "\n";
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  struct Mine {
    int original;
    std::uint64_t digest;
  };
  const auto all = ctx.comm().gather(Mine{ctx.role() != fx::Role::recovered ? 1 : 0, h}, 0);
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].original && all[i].digest != all[0].digest) {
      FX_THROW(fx::Error, "rank " + std::to_string(i) +
                              " saw other TryBlock outcomes than rank 0, whose log is:\n" + text);
    }
  }
  return text;
}

}  // namespace tryblock_test
