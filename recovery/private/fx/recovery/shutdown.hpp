#pragma once
#include <fx/exit_code.hpp>
#include <mpi.h>

#include <string_view>
#include <vector>

namespace fx::detail {

// Leaving the job, in two steps so the verdict can be decided in between.
//
// shutdown_agree: an agreement among the live processes of `comm` (every
// one gets here before anyone leaves, so nobody waits on a process that has
// gone). Returns true when nobody saw a failure, ever or during it, the
// same answer on every survivor; otherwise `died` gets the ranks of `comm`
// that are gone, the same list everywhere (a shrink decides it).
bool shutdown_agree(MPI_Comm comm, bool failures_seen, std::vector<int>& died);

// shutdown_leave: MPI_Finalize and return when `clean`. After a failure,
// Open MPI 5's MPI_Finalize can hang in its runtime fence waiting for the
// dead process (open-mpi/ompi#11404), so the process flushes stdio and
// leaves with _exit(0) instead (the verdict is in $FX_STATUS_FILE; a
// non-zero status was seen to deadlock mpiexec). Never returns then.
void shutdown_leave(bool clean);

// Both, for programs without the fx runtime (substrate tools, benchmarks):
// a failure seen first during the agreement turns an ok `exit_code` into
// "survived" in $FX_STATUS_FILE (written by world rank 0).
void shutdown(MPI_Comm comm, bool failures_seen, int exit_code);

// Ends the whole job from this one process, with the verdict `code why`.
// Under --with-ft ulfm Open MPI's MPI_Abort ends only its caller, and a
// process that leaves with an exit status (not by a signal) is reported
// as failed to nobody: the others waited for it until the time limit. So
// the verdict goes to $FX_STATUS_FILE and to "$FX_STATUS_FILE.end", the
// launcher's cue to stop the job at once; after kEndJobWaitS (at once
// with no FX_STATUS_FILE) this process dies by SIGKILL, which Open MPI does
// report: without a launcher that reads the cue the others see a process
// failure, and repair it. Without ULFM, MPI_Abort ends the job instead.
inline constexpr double kEndJobWaitS = 2.0;
[[noreturn]] void end_job_from_here(ExitCode code, std::string_view why);
// Its part without MPI (the cue and SIGKILL): for a thread that may not
// call MPI (PMIx's, framework/src/job_exits.cpp), where ULFM is known on.
[[noreturn]] void end_job_without_mpi(ExitCode code, std::string_view why);

}  // namespace fx::detail
