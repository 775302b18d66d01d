#include <fx/detail/status.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fx {
void write_status(ExitCode code, std::string_view text) {
  const char* path = std::getenv("FX_STATUS_FILE");
  if (!path || !*path) return;
  if (std::FILE* f = std::fopen(path, "w")) {
    std::fprintf(f, "%d %.*s\n", static_cast<int>(code), static_cast<int>(text.size()), text.data());
    std::fclose(f);
  }
}
}  // namespace fx

namespace fx::detail {
void print_usage_error(std::string_view what) {
  std::fprintf(stderr, "fx: error: %.*s\n", static_cast<int>(what.size()), what.data());
  std::fflush(stderr);
}

void mark_started(int world_rank) {
  const char* path = std::getenv("FX_STATUS_FILE");
  if (!path || !*path) return;
  const std::string up = std::string(path) + ".up." + std::to_string(world_rank);
  if (std::FILE* f = std::fopen(up.c_str(), "w")) std::fclose(f);
}
}  // namespace fx::detail
