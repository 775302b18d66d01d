#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fx/detail/files.hpp>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

namespace fx::detail {

bool shutdown_agree(MPI_Comm comm, bool failures_seen, std::vector<int>& died) {
  died.clear();
  if (comm == MPI_COMM_NULL || !ulfm::active()) return !failures_seen;
  const ulfm::Agreement first = ulfm::agree_value(comm, failures_seen ? 0 : 1);
  // A death before or during the agreement shows in its return code, which
  // need not be the same everywhere (the flag is): agree once more on
  // whether anyone saw one, so every survivor takes the same branch.
  std::vector<int> known;
  ulfm::ack_failed(comm, known);
  const int ok = first.rc == MPI_SUCCESS && first.flag == 1 ? 1 : 0;
  if (ulfm::agree_value(comm, ok).flag == 1) return true;
  // Who is gone, the same list on every survivor: a shrink's consensus
  // (local knowledge of failures differs from process to process).
  MPI_Comm live = MPI_COMM_NULL;
  if (ulfm::shrink(comm, &live) == MPI_SUCCESS) {
    died = ulfm::missing_ranks(comm, live);
    // Nobody leaves while a peer may still be activating `live`: over TCP,
    // a peer's closed connection is reported as a process failure, and
    // Open MPI 5.0.x crashes revoking a half-built communicator
    // (ompi_comm_revoke_local from ompi_comm_set_rank_failed). Every member
    // enters this agreement only after its activation.
    ulfm::agree_value(live, 1);
    MPI_Comm_free(&live);
  }
  return false;
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

namespace {
void settle_verdict(ExitCode code, std::string_view why) {
  write_status(code, why);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
}
}  // namespace

void end_job_without_mpi(ExitCode code, std::string_view why) {
  settle_verdict(code, why);
  const char* path = std::getenv("FX_STATUS_FILE");
  // (A target that is no regular file gets nothing beside it, as in mark_started.)
  const bool cue = path != nullptr && *path != '\0' && unusable_target(path, PathKind::file).empty() &&
                   write_replacing(std::string(path) + ".end", status_line(code, why), 0644).empty();
  // The launcher stops the job within a poll (0.2 s); meanwhile the others
  // wait for this process, as they did before it came here.
  if (cue) std::this_thread::sleep_for(std::chrono::duration<double>(kEndJobWaitS));
  std::raise(SIGKILL);
  _exit(static_cast<int>(code));  // not reached
}

void end_job_from_here(ExitCode code, std::string_view why) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  // Without ULFM Open MPI's MPI_Abort does end the job.
  if (initialized != 0 && finalized == 0 && !ulfm::active()) {
    settle_verdict(code, why);
    PMPI_Abort(MPI_COMM_WORLD, static_cast<int>(code));
  }
  end_job_without_mpi(code, why);
}

}  // namespace fx::detail
