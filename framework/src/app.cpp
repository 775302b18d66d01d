#include <fx/app.hpp>
#include <fx/detail/status.hpp>
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>

#include "config_schema.hpp"
#include "device_session.hpp"
#include "job_exits.hpp"
#include "runtime.hpp"

namespace fx {

std::int64_t ResilientApp::resize(Context& ctx) {
  setup(ctx);  // the runtime cleared the registrations

  initialize(ctx);
  return 0;
}

bool ResilientApp::rebuild_static(Context& ctx, bool missing) {
  (void)ctx;
  (void)missing;
  return false;
}

namespace detail {
namespace {

// An error no repair can fix (bad app configuration, a bug): every rank
// may be blocked in MPI, so the job is ended at once, with the reason.
[[noreturn]] void fatal(const Error& e, ExitCode code) {
  log::error("{}", e.what());
  end_job_from_here(code, e.what());
}

// scripts/launch.sh asks an fx program (it finds this flag's text in the
// executable) for its launch settings before mpiexec starts: no MPI here.
constexpr std::string_view kPrintLaunch = "--fx-print-launch";

bool launch_settings_asked(int argc, char** argv) {
  return std::any_of(argv, argv + argc, [&](const char* a) { return a != nullptr && a == kPrintLaunch; });
}

int print_launch_settings(int argc, char** argv) {
  // The launcher appends the flag after the app's arguments: take it out,
  // so that `app --fx-config` is missing its file, not given this flag.
  const auto end = std::remove_if(argv + 1, argv + argc, [&](const char* a) { return a == kPrintLaunch; });
  argc = static_cast<int>(end - argv);
  argv[argc] = nullptr;
  return print_launch(argc, argv);
}

struct MpiWorld {
  int rank = 0, size = 0;
};

// MPI at the thread level fx needs, failures returned on the world; nullopt
// (MPI finalized, the reason reported) when the library cannot give it.
std::optional<MpiWorld> start_mpi(int& argc, char**& argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, ulfm::kThreadLevelAsked, &provided);
  ulfm::prepare_process();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MpiWorld w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  if (const std::string why = ulfm::orphaned_world(w.size); !why.empty()) {
    log::error("{}", why);  // no start-up mark, no verdict: this process is no part of the job
    MPI_Finalize();
    return std::nullopt;
  }
  if (const std::string why = ulfm::thread_level_shortfall(provided); !why.empty()) {
    if (w.rank == 0) {
      log::error("{}", why);
      write_status(ExitCode::error, why);
    }
    MPI_Finalize();
    return std::nullopt;
  }
  return w;
}

// A usage error every rank reached alike: rank 0 says it, MPI is finalized.
void end_with_usage_error(const ConfigError& e, const MpiWorld& world) {
  if (world.rank == 0) {
    print_usage_error(e.what());
    write_status(ExitCode::usage, e.what());
  }
  stop_watching_peer_exits();  // every process leaves with 2 now
  MPI_Finalize();
}

// The run's configuration, checked against the world and the app's keys
// (its flags taken out of argc/argv); nullopt (MPI finalized, the usage
// error reported) when it is wrong.
std::optional<Config> read_config(int& argc, char** argv, const MpiWorld& world, const AppTraits& traits) {
  Config config;
  try {
    config = load_config(argc, argv);
    validate_against_world(config, world.size);
    if (traits.keys) config.app.check_keys(*traits.keys);
  } catch (const ConfigError& e) {
    // Every rank parsed the same input and reached the same verdict.
    end_with_usage_error(e, world);
    return std::nullopt;
  }
  return config;
}

// Kokkos' options taken out of argc/argv, for a start when this process
// becomes active; null (MPI finalized, the usage error reported) when the
// visible device list is malformed.
std::unique_ptr<DeviceSession> open_device_session(int& argc, char** argv, const MpiWorld& world) {
  try {
    return std::make_unique<DeviceSession>(argc, argv);
  } catch (const ConfigError& e) {
    end_with_usage_error(e, world);
    return nullptr;
  }
}

void warn_stray_settings(int argc, char** argv, int world_rank) {
  if (const auto stray = setting_like_arguments(argc, argv); world_rank == 0 && !stray.empty()) {
    log::warn(
        "argument(s) '{}' read like settings and are not: fx reads a setting after --fx-set "
        "(--fx-set {}); this run does not use them",
        fmt::join(stray, "' '"), stray.front());
  }
}

// The app under the runtime, up to the job's verdict; `clean`: whether
// every live process agreed to leave. Errors no repair can fix end the job.
int run_runtime(const AppMaker& make, Config config, std::vector<std::string> args, DeviceSession& session,
                const AppTraits& traits, bool& clean) {
  int code = 0;
  try {
    Runtime rt(std::move(config), std::move(args), make, session, traits.rebuilds_static);
    rt.execute();
    // The verdict is settled after every live process has agreed to leave,
    // so a death in the last moments (the finalize phase) is in the status,
    // the summary and the report alike.
    std::vector<int> died;
    clean = shutdown_agree(rt.world(), rt.failures_seen(), died);
    code = rt.conclude_job(clean, died);
    rt.release_world();
  } catch (const ConfigError& e) {
    fatal(e, ExitCode::usage);
  } catch (const Error& e) {
    fatal(e, ExitCode::error);
  } catch (const std::exception& e) {
    fatal(Error(e.what(), __FILE__, __LINE__), ExitCode::error);
  }
  return code;
}

}  // namespace

int run_app(const std::function<std::unique_ptr<ResilientApp>()>& make, int argc, char** argv,
            const AppTraits& traits) {
  if (launch_settings_asked(argc, argv)) return print_launch_settings(argc, argv);
  const std::optional<MpiWorld> world = start_mpi(argc, argv);
  if (!world) return static_cast<int>(ExitCode::error);
  mark_started(world->rank);  // from here on a lost process is recoverable

  std::optional<Config> config = read_config(argc, argv, *world, traits);
  if (!config) return static_cast<int>(ExitCode::usage);
  log::set_level(config->log_level);  // the logger exists before the exit handler, so outlives it
  watch_app_exits();
  warn_stray_settings(argc, argv, world->rank);
  std::unique_ptr<DeviceSession> session = open_device_session(argc, argv, *world);
  if (!session) return static_cast<int>(ExitCode::usage);
  std::vector<std::string> args(argv, argv + argc);

  bool clean = true;
  const int code = run_runtime(make, std::move(*config), std::move(args), *session, traits, clean);
  if (!session->started())
    log::debug("never active: this process initialised neither Kokkos nor a device, nor made the app");
  session.reset();  // Kokkos::finalize, where it was initialised
  // Every process gets here before any leaves (the end's agreement, then
  // MPI_Finalize's fence): a non-zero exit from now on is a verdict's code.
  stop_watching_peer_exits();
  shutdown_leave(clean);
  return code;
}

}  // namespace detail
}  // namespace fx
