// The ways an application leaves a job that Open MPI 5 does not report
// under --with-ft ulfm: exit(), MPI_Abort, and any exit with a non-zero
// status (_exit, quick_exit, a sanitizer's report). Each ended one process,
// and the others waited for it until the launcher's time limit (measured at
// 4+2: a rank's exit(7), its MPI_Abort, its _exit(7), all ended 124 after
// the limit). Each now ends the job, as an error on one rank does.
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <mpi.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

#if FX_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>

#include <thread>
#endif

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

// Whether another process's exit is still news: until this process starts
// to leave (after that a non-zero status is a verdict's exit code).
std::atomic<bool>& peers_watched() {
  static std::atomic<bool> on{false};
  return on;
}

#if FX_HAVE_PMIX
// This process's world rank, for PMIx's thread (which makes no MPI call).
std::atomic<int>& my_world_rank() {
  static std::atomic<int> rank{-1};
  return rank;
}

// Open MPI's ULFM hears of deaths by signal, aborts and zero-status exits
// without MPI_Finalize, not of a non-zero exit status, which PRRTE reports
// to every process as PMIX_ERR_EXIT_NONZERO_TERM (with the process and its
// status). Called on PMIx's progress thread, which must not block: the
// job ends on a thread of its own.
void on_nonzero_exit(size_t /*id*/, pmix_status_t /*status*/, const pmix_proc_t* /*source*/,
                     pmix_info_t info[], size_t ninfo, pmix_info_t* /*results*/, size_t /*nresults*/,
                     pmix_event_notification_cbfunc_fn_t done, void* done_data) {
  long long rank = -1;
  int status = -1;
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) && info[i].value.type == PMIX_PROC)
      rank = info[i].value.data.proc->rank;
    else if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE) && info[i].value.type == PMIX_INT)
      status = info[i].value.data.integer;
  }
  // Handled: Open MPI's catch-all handler would treat it as a fatal error.
  if (done != nullptr) done(PMIX_EVENT_ACTION_COMPLETE, nullptr, 0, nullptr, nullptr, done_data);
  if (!peers_watched().exchange(false)) return;
  // Every process hears it; one says it (the verdict and the launcher say it too).
  const bool say = my_world_rank() == (rank == 0 ? 1 : 0);
  std::thread([rank, status, say] {
    const std::string why = fmt::format(
        "world rank {} exited with status {} inside the job, running no exit handler (_exit, "
        "quick_exit, a sanitizer's report); Open MPI's ULFM does not act on that, so the job ends here",
        rank, status);
    if (say) log::error("{}", why);
    end_job_without_mpi(ExitCode::error, why);
  }).detach();
}

// PMIx's functions are the ones Open MPI loaded: a second PMIx library
// would be a second client of the same server.
void watch_peer_exits() {
  using Register = decltype(&PMIx_Register_event_handler);
  auto* reg = reinterpret_cast<Register>(dlsym(RTLD_DEFAULT, "PMIx_Register_event_handler"));
  if (reg == nullptr) {
    log::debug("no PMIx_Register_event_handler in this process: a peer's non-zero exit is not watched");
    return;
  }
  pmix_status_t code = PMIX_ERR_EXIT_NONZERO_TERM;
  my_world_rank() = world_rank();
  peers_watched() = true;
  const pmix_status_t rc = reg(&code, 1, nullptr, 0, on_nonzero_exit, nullptr, nullptr);
  if (rc < 0) {
    peers_watched() = false;
    log::warn("PMIx refused fx's handler for a process's non-zero exit ({}): such an exit would hang the job",
              rc);
  }
}
#else
void watch_peer_exits() {}
#endif

}  // namespace

void watch_app_exits() {
  if (watching().exchange(true)) return;
  on_exit(on_process_exit, nullptr);
  if (ulfm::active()) watch_peer_exits();
}

void stop_watching_peer_exits() { peers_watched() = false; }

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
