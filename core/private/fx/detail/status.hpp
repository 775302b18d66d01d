#pragma once
// Launcher protocol internals: the start-up marks and the one usage-error
// format. The verdict itself is public (<fx/exit_code.hpp>).
#include <fx/exit_code.hpp>

#include <string_view>

namespace fx::detail {
using fx::write_status;
// Touch "$FX_STATUS_FILE.up.<world rank>" once MPI_Init has returned: until
// every process has, a lost process hangs the others inside Open MPI's
// start-up (no ULFM yet), and the launcher ends the job instead.
void mark_started(int world_rank);
// A usage or configuration error, in the one format of every such error
// (before or after MPI start-up): "fx: error: <what>" on stderr.
void print_usage_error(std::string_view what);
}  // namespace fx::detail
