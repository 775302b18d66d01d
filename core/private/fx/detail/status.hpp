#pragma once
// Launcher protocol internals: the start-up marks and the one usage-error
// format. The verdict itself is public (<fx/exit_code.hpp>).
#include <fx/exit_code.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace fx::detail {
using fx::write_status;
// The verdict's one line, "<code> <why>\n": the status file's and the
// launcher's end cue's (end_job_from_here) alike.
std::string status_line(ExitCode code, std::string_view why);
// Touch "$FX_STATUS_FILE.up.<world rank>" once MPI_Init has returned: until
// every process has, a lost process hangs the others inside Open MPI's
// start-up (no ULFM yet), and the launcher ends the job instead.
void mark_started(int world_rank);
// Which launch of the job this is under the supervisor (FX_ATTEMPT: 1 the
// first, 2 after one relaunch ...; 1 without a supervisor).
int launch_attempt();

// "$FX_PROGRESS_FILE" (set by the supervisor) holds "<iteration> <fx::now()>"
// of the newest step, written at most every `period` seconds and always for
// the first step after a (re)start, and on a second line the same of that
// first step: the supervisor's watchdog reads its age, the supervisor's
// report (and the node-loss benchmark) the time of the first resumed step.
class ProgressStamp {
 public:
  explicit ProgressStamp(double period = 0.5);
  void step(std::int64_t iteration, double t, bool first);

 private:
  std::string path_;
  double period_;
  double last_ = -1;
  std::string first_;  // "<iteration> <time>" of the first step
};

// A usage or configuration error, in the one format of every such error
// (before or after MPI start-up): "fx: error: <what>" on stderr.
void print_usage_error(std::string_view what);
}  // namespace fx::detail
