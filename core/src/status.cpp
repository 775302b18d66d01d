#include <fx/detail/files.hpp>
#include <fx/detail/status.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fx {
void write_status(ExitCode code, std::string_view text) {
  const char* path = std::getenv("FX_STATUS_FILE");
  if (!path || !*path) return;
  // Written aside and renamed (the launcher never reads half a line); a
  // target that is no regular file is left alone (the job's own checks
  // refused it before MPI started).
  detail::write_replacing(path, detail::status_line(code, text), 0644);
}
}  // namespace fx

namespace fx::detail {
std::string status_line(ExitCode code, std::string_view why) {
  return fmt::format("{} {}\n", static_cast<int>(code), why);
}

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
  write_replacing(path_, fmt::format("{} {:.6f}\n{}\n", iteration, t, first_), 0644);
}

void mark_started(int world_rank) {
  const char* path = std::getenv("FX_STATUS_FILE");
  if (!path || !*path) return;
  // A target that is no regular file gets nothing beside it (a
  // "/dev/full.up.0" once outlived the configuration check's refusal); a
  // directory that takes no file fails the write below by itself.
  if (!unusable_target(path, PathKind::file).empty()) return;
  const std::string up = std::string(path) + ".up." + std::to_string(world_rank);
  write_replacing(up, "", 0644);
}
}  // namespace fx::detail
