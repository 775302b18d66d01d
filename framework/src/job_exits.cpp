// The two ways an application leaves a job that Open MPI 5 does not report
// under --with-ft ulfm: exit() and MPI_Abort. Each ended one process, and
// the others waited for it until the launcher's time limit (measured at
// 4+2: a rank's exit(7), its MPI_Abort, both ended 124 after the limit).
// Both now end the job, as an error on one rank does.
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <mpi.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "job_exits.hpp"

namespace fx::detail {
namespace {

// Whether fx's runtime runs in this process (run_app): only then are an
// exit() and an MPI_Abort fx's to turn into the job's end. Process-wide,
// as the exit handlers and the MPI_Abort symbol it guards are.
std::atomic<bool>& watching() {
  static std::atomic<bool> on{false};
  return on;
}

int world_rank() {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

[[noreturn]] void end_job(const std::string& why) {
  log::error("{}", why);
  end_job_from_here(ExitCode::error, why);
}

// fx's own ways out finalize MPI or _exit first: a live MPI here means the
// app, or a library it calls, called exit() (on any thread).
void on_process_exit(int status, void* /*unused*/) {
  int finalized = 1;
  PMPI_Finalized(&finalized);
  if (finalized != 0) return;
  end_job(
      fmt::format("world rank {} called exit({}) inside the job, before fx's end (the app or a library it "
                  "calls); the others would wait for it, so the job ends here (throw an exception to end "
                  "a job with a reason)",
                  world_rank(), status));
}

}  // namespace

void watch_app_exits() {
  if (watching().exchange(true)) return;
  on_exit(on_process_exit, nullptr);
}

}  // namespace fx::detail

// MPI's profiling interface: an application's MPI_Abort comes here. Under
// ULFM Open MPI's own ends only the caller, unreported. Programs that link
// fx without its runtime (the baselines) keep Open MPI's.
extern "C" int MPI_Abort(MPI_Comm comm, int errorcode) {
  if (!fx::detail::watching() || !fx::ulfm::active()) return PMPI_Abort(comm, errorcode);
  fx::detail::end_job(
      fmt::format("world rank {} called MPI_Abort (error code {}); under ULFM Open MPI would end "
                  "only this process, so fx ends the job",
                  fx::detail::world_rank(), errorcode));
}
