#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace fx::detail {

void shutdown(MPI_Comm comm, bool failures_seen, int exit_code) {
  // Everyone still alive gets here before anyone leaves, so no live rank is
  // left waiting on one that has gone; the agreement also tells whether a
  // process died meanwhile (say, in the finalize phase).
  int clean = failures_seen ? 0 : 1;
  int rc = MPI_SUCCESS;
  if (comm != MPI_COMM_NULL && ulfm::active()) rc = ulfm::agree(comm, &clean);
  if (rc == MPI_SUCCESS && clean) {
    MPI_Finalize();
    return;
  }
  if (!failures_seen) {
    int world_rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world_rank == 0 && exit_code == static_cast<int>(ExitCode::ok)) {
      write_status(ExitCode::survived, "a process failed during shutdown");
    }
  }
  // Open MPI 5's MPI_Finalize can hang after a failure, waiting in its
  // runtime fence for the dead process (open-mpi/ompi#11404): leave without
  // it. The verdict is in $FX_STATUS_FILE; the process itself exits 0,
  // because mpiexec was seen to deadlock (6 of 37 runs at 8+2) when ranks
  // exited non-zero after a failure.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace fx::detail
