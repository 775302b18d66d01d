#include <fx/detail/status.hpp>

#include <fmt/format.h>

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

int launch_attempt() {
  const char* v = std::getenv("FX_ATTEMPT");
  const int n = v ? std::atoi(v) : 1;
  return n > 0 ? n : 1;
}

ProgressStamp::ProgressStamp(double period) : period_(period) {
  if (const char* p = std::getenv("FX_PROGRESS_FILE")) path_ = p;
}

void ProgressStamp::step(std::int64_t iteration, double t, bool first) {
  if (path_.empty() || (!first && t - last_ < period_)) return;
  last_ = t;
  if (first) first_ = fmt::format("{} {:.6f}", iteration, t);
  // Written beside and renamed, so a reader never sees half a line.
  const std::string tmp = path_ + ".tmp";
  if (std::FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%lld %.6f\n%s\n", static_cast<long long>(iteration), t, first_.c_str());
    std::fclose(f);
    std::rename(tmp.c_str(), path_.c_str());
  }
}

void mark_started(int world_rank) {
  const char* path = std::getenv("FX_STATUS_FILE");
  if (!path || !*path) return;
  const std::string up = std::string(path) + ".up." + std::to_string(world_rank);
  if (std::FILE* f = std::fopen(up.c_str(), "w")) std::fclose(f);
}
}  // namespace fx::detail
