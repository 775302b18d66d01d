// Reinit mode: the resilient function is the app's one "step". A failure
// unwinds it (fx::ProcessFailure), the runtime repairs as for any app, and
// the next step enters the function again. The runtime's own restore is off:
// the function registers its data on each entry and restores it itself.
#include <fx/app.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/detail/status.hpp>
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/reinit.hpp>

#include <Kokkos_Core.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "tryblock_detail.hpp"

namespace fx {
namespace {

class Driver;

// One rollback region per process.
Driver* g_region = nullptr;          // set while fx::reinit runs
bool g_used = false;                 // fx::reinit was called in this process
std::optional<ReinitMode> g_preset;  // fx::set_reinit_mode before entering
ReinitMode g_mode = ReinitMode::async;

// Finalizing MPI or Kokkos inside the function leaves nothing to recover
// or report with: say so and stop this process at once.
void check_not_finalized(const char* where) {
  int mpi_done = 0;
  MPI_Finalized(&mpi_done);
  if (!mpi_done && Kokkos::is_initialized()) return;
  const std::string why = fmt::format(
      "fx::reinit: {} was finalized inside the resilient function (found at {}); fx finalizes MPI and Kokkos "
      "itself, after the function returns",
      mpi_done ? "MPI" : "Kokkos", where);
  log::error("{}", why);
  detail::end_job_from_here(ExitCode::usage, why);
}

ReinitMode choose_mode(const Config& config) {
  const ReinitMode yaml = config.reinit.mode;
  if (!g_preset) return yaml;
  if (config.origins.count("reinit.mode") && yaml != *g_preset) {
    FX_THROW(UsageError,
             fmt::format("reinit: fx::set_reinit_mode chose mode '{}' before entering, but reinit.mode "
                         "is '{}' ({}); choose the mode in one place",
                         to_string(*g_preset), to_string(config.reinit.mode),
                         config.origin_of("reinit.mode").position));
  }
  return *g_preset;
}

class Driver final : public ResilientApp {
 public:
  explicit Driver(const ResilientFunction& fn) : fn_(fn) { g_region = this; }
  ~Driver() override { g_region = nullptr; }
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  bool inside() const { return inside_; }

  void setup(Context& ctx) override {
    detail::ContextAccess::rt(ctx).app_restores();
    // A usage error revokes the app comm; revoking it before every rank has
    // finished creating it crashes Open MPI 5 (ompi_comm_revoke_local), so
    // the first ranks wait for the others here.
    if (ctx.role() == Role::initial || ctx.role() == Role::restarted) ctx.comm().agree(1);
    g_mode = choose_mode(ctx.fx_config());
  }

  bool step(Context& ctx, std::int64_t) override {
    // Uniform even under failures: once any process has returned from the
    // function, a failure is outside the region, and errors are fatal.
    if (!ctx.comm().agree(returned_ ? 0 : 1)) {
      FX_THROW(Error,
               "a process failed after the resilient function had returned, outside the Reinit rollback "
               "region: there, as with errors-are-fatal, the job ends");
    }
    const ReinitState state = entries_ > 0 ? ReinitState::reinited
                              : ctx.role() == Role::recovered || ctx.role() == Role::restarted
                                  ? ReinitState::restarted
                                  : ReinitState::fresh;
    ++entries_;
    log::debug("entering the resilient function: {}", to_string(state));
    {
      Entry entry(*this, ctx);
      fn_(ctx, state);
    }
    check_not_finalized("its return");
    returned_ = true;
    ctx.fault_point(Phase::finalize);  // outside the region from here on
    return true;
  }

 private:
  // What the function registered dies with its locals, on return or unwind.
  class Entry {
   public:
    Entry(Driver& d, Context& ctx) : d_(d), ctx_(ctx) { d_.inside_ = true; }
    ~Entry() {
      d_.inside_ = false;
      detail::ContextAccess::rt(ctx_).drop_registrations();
      detail::StoreAccess::clear(ctx_.store());
    }
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;

   private:
    Driver& d_;
    Context& ctx_;
  };

  const ResilientFunction& fn_;
  int entries_ = 0;
  bool inside_ = false;
  bool returned_ = false;
};

detail::RuntimeServices& region_runtime(Context& ctx, const char* what) {
  if (g_region == nullptr || !g_region->inside()) {
    FX_THROW(UsageError,
             fmt::format("fx::{} works inside the resilient function of fx::reinit only (called outside it)",
                         what));
  }
  check_not_finalized(what);
  return detail::ContextAccess::rt(ctx);
}

// A failure is known here: go back to the start of the function.
void roll_back_if_failing(detail::RuntimeServices& rt, const char* where) {
  if (rt.failing())
    FX_THROW(ProcessFailure, fmt::format("rollback at {}: a process failure is known", where), {});
  rt.check_world_watch();  // throws once a peer announced a failure
}

}  // namespace

int reinit(int argc, char** argv, const ResilientFunction& fn) {
  if (g_region != nullptr) {
    FX_THROW(UsageError,
             "fx::reinit: a rollback region is already active in this process (fx::reinit called "
             "inside the resilient function); at most one may be active");
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (g_used || initialized) {
    FX_THROW(UsageError,
             "fx::reinit: MPI is already initialized (a second fx::reinit, or a call inside fx::run); "
             "fx::reinit owns MPI and is called once per process, from main()");
  }
  if (!fn) FX_THROW(UsageError, "fx::reinit: the resilient function is empty");
  g_used = true;
  return detail::run_app([&fn] { return std::make_unique<Driver>(fn); }, argc, argv, {});
}

void set_reinit_mode(ReinitMode mode) {
  if (g_region != nullptr) {
    if (mode == g_mode) return;
    FX_THROW(UsageError,
             fmt::format("fx::set_reinit_mode: the Reinit handler mode is '{}', chosen before entering "
                         "the rollback region; it cannot change to '{}' inside it",
                         to_string(g_mode), to_string(mode)));
  }
  g_preset = mode;
}

ReinitMode reinit_mode() { return g_region != nullptr ? g_mode : g_preset.value_or(ReinitMode::async); }

void test_failure(Context& ctx) {
  roll_back_if_failing(region_runtime(ctx, "test_failure"), "fx::test_failure");
}

void iteration_point(Context& ctx, std::int64_t iteration) {
  detail::RuntimeServices& rt = region_runtime(ctx, "iteration_point");
  rt.reached(iteration);
  if (g_mode == ReinitMode::async) roll_back_if_failing(rt, "fx::iteration_point");
  rt.fault_point(Phase::compute);
}

void checkpoint(Context& ctx, std::int64_t iteration) {
  detail::RuntimeServices& rt = region_runtime(ctx, "checkpoint");
  rt.checkpoint(iteration);
}

std::optional<std::int64_t> restore_checkpoint(Context& ctx) {
  return region_runtime(ctx, "restore_checkpoint").restore_checkpoint();
}

}  // namespace fx
