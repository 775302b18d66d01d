#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace fx::detail {

void shutdown(MPI_Comm comm, bool failures_seen, int exit_code) {
  if (!failures_seen) {
    MPI_Finalize();
    return;
  }
  // Everyone still alive gets here before anyone leaves, so no live rank is
  // left waiting on one that has gone.
  int flag = 1;
  if (comm != MPI_COMM_NULL) ulfm::agree(comm, &flag);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(exit_code);
}

}  // namespace fx::detail
