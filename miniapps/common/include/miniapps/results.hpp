#pragma once
// Result lines and the baselines' YAML run report. The fx apps and their
// baselines print results in the same form, one per line on stdout:
//
//   result: l2_norm = 12.345678901234567
//   timing: solve_s = 0.8123
//
// so tests and people can compare runs with grep and diff: every `result:`
// line is part of the answer, `timing:` lines are not.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace miniapps {

class Results {
 public:
  void add(const std::string& key, const std::string& text) { items_.emplace_back(key, text); }
  void add(const std::string& key, double value);
  void add(const std::string& key, std::int64_t value) { add(key, std::to_string(value)); }
  void add_timing(const std::string& key, double seconds) { timings_.emplace_back(key, seconds); }
  const std::vector<std::pair<std::string, std::string>>& items() const { return items_; }
  const std::vector<std::pair<std::string, double>>& timings() const { return timings_; }
  void print(std::FILE* out = stdout) const;

 private:
  std::vector<std::pair<std::string, std::string>> items_;
  std::vector<std::pair<std::string, double>> timings_;
};

// Seconds on the node's monotonic clock (shared by its processes, so a
// start time restored from a checkpoint still means something).
inline double wtime() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Wall time from one step's start to the next one's, as the caller's loop
// (the baseline's, or fx's runtime) sees it: its median and 10th
// percentile are robust to the odd descheduling on a shared machine,
// which whole-run times are not (nor by the one interval that spans a
// recovery).
class IterationTimer {
 public:
  void tick() {
    const double t = wtime();
    if (last_ > 0) intervals_.push_back(t - last_);
    last_ = t;
  }
  double percentile(double q) const;  // 0 when no interval was seen

 private:
  double last_ = 0;
  std::vector<double> intervals_;
};

// "iteration 40/200  elapsed 0.123 s  residual 1.234e-05" (residual < 0:
// not computed yet)
std::string progress_line(std::int64_t iteration, std::int64_t total, double elapsed, double residual);

// What a baseline writes as its YAML report (the fx apps get theirs from
// the runtime). Keys are snake_case, in the spirit of miniFE's YAML output.
struct BaselineReport {
  std::string app;
  int ranks = 0;
  std::vector<std::pair<std::string, std::string>> parameters;
  Results results;
  // Throws std::runtime_error naming the path when it cannot be written.
  void write(const std::string& path) const;
};

// Peak resident memory of this process (VmHWM of /proc/self/status), in
// kB; 0 where that is not available.
std::int64_t peak_rss_kb();

// Host, MPI library, Kokkos version and execution space, for reports.
std::vector<std::pair<std::string, std::string>> platform_info();

}  // namespace miniapps
