#pragma once
#include <mpi.h>

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

}  // namespace fx::detail
