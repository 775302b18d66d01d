#pragma once
// The job's verdict for the launcher (scripts/launch.sh), which exits with
// it: mpiexec --with-ft ulfm exits 0 even when ranks were killed.
#include <string_view>

namespace fx {
// Exit codes of an fx job, as the launcher reports them.
enum class ExitCode : int {
  ok = 0,        // finished, no failure seen
  error = 1,     // an error unrelated to process failures
  usage = 2,     // bad command line or configuration
  survived = 3,  // finished correctly after surviving failures
  aborted = 4,   // failures could not be survived (policy abort)
};
}  // namespace fx

namespace fx::detail {
// Write "<code> <text>" to $FX_STATUS_FILE (no-op when unset). One writer.
void write_status(ExitCode code, std::string_view text);
// Touch "$FX_STATUS_FILE.up.<world rank>" once MPI_Init has returned: until
// every process has, a lost process hangs the others inside Open MPI's
// start-up (no ULFM yet), and the launcher ends the job instead.
void mark_started(int world_rank);
// A usage or configuration error, in the one format of every such error
// (before or after MPI start-up): "fx: error: <what>" on stderr.
void print_usage_error(std::string_view what);
}  // namespace fx::detail
