#pragma once
#include <mpi.h>

namespace fx::detail {

// Leave the job: an agreement among the live processes of `comm`, then,
// when nobody saw a failure, MPI_Finalize and return. After a failure,
// Open MPI 5's MPI_Finalize can hang in its runtime fence waiting for the
// dead process (open-mpi/ompi#11404), so the survivors agree on `comm` (a
// communicator of live processes) and leave with _exit(0) after flushing
// stdio: the verdict is in $FX_STATUS_FILE (exit_code only decides whether
// a failure seen first here turns an "ok" verdict into "survived"). Never
// returns in that case.
void shutdown(MPI_Comm comm, bool failures_seen, int exit_code);

}  // namespace fx::detail
