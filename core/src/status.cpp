#include <fx/detail/status.hpp>

#include <cstdio>
#include <cstdlib>

namespace fx::detail {
void write_status(ExitCode code, std::string_view text) {
  const char* path = std::getenv("FX_STATUS_FILE");
  if (!path || !*path) return;
  if (std::FILE* f = std::fopen(path, "w")) {
    std::fprintf(f, "%d %.*s\n", static_cast<int>(code), static_cast<int>(text.size()), text.data());
    std::fclose(f);
  }
}
}  // namespace fx::detail
