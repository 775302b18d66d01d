#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace fx::detail {

bool shutdown_agree(MPI_Comm comm, bool failures_seen, std::vector<int>& failed) {
  failed.clear();
  int clean = failures_seen ? 0 : 1;
  if (comm == MPI_COMM_NULL || !ulfm::active()) return clean == 1;
  const int rc = ulfm::agree(comm, &clean);
  // Whoever died before or during the agreement is known to every survivor
  // now; acknowledging also keeps later calls from failing on them.
  ulfm::ack_failed(comm, failed);
  return rc == MPI_SUCCESS && clean == 1 && failed.empty();
}

void shutdown_leave(bool clean) {
  if (clean) {
    MPI_Finalize();
    return;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(0);
}

void shutdown(MPI_Comm comm, bool failures_seen, int exit_code) {
  std::vector<int> failed;
  const bool clean = shutdown_agree(comm, failures_seen, failed);
  if (!clean && !failures_seen) {
    int world_rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world_rank == 0 && exit_code == static_cast<int>(ExitCode::ok)) {
      write_status(ExitCode::survived, "a process failed during shutdown");
    }
  }
  shutdown_leave(clean);
}

}  // namespace fx::detail
