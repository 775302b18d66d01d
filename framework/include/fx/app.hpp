#pragma once
/// \file
/// The one way to write a resilient application:
/// \code
///   class MyApp : public fx::ResilientApp {
///     void setup(fx::Context& ctx) override;      // allocate, register state
///     void initialize(fx::Context& ctx) override; // fresh start only
///     bool step(fx::Context& ctx, std::int64_t it) override;  // true: done
///     void finish(fx::Context& ctx) override;     // report results
///   };
///   int main(int argc, char** argv) { return fx::run<MyApp>(argc, argv); }
/// \endcode
#include <fx/context.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace fx {

/// What ResilientApp::restored is told about the restore just done.
struct RestoreInfo {
  std::int64_t iteration = 0;                     ///< the version's iteration: the next step runs it
  CheckpointLevel level = CheckpointLevel::none;  ///< where it came from (memory, node or hdf5)
  /// This process holds nothing of its own from before the restore: a
  /// recruited spare, or every process of a job that started from a
  /// checkpoint (a relaunch, a restart from storage). What the app did not
  /// register (buffers, caches, random streams) is as setup() left it here,
  /// and as the steps left it on the other ranks.
  bool fresh_process = false;
  bool resized = false;  ///< resize() re-decomposed the state onto ctx.size() ranks
};

/// The application fx runs through failures: fx::run calls these hooks (setup,
/// initialize, then step until it returns true, then finish) and repeats
/// what a repair needs.
class ResilientApp {
 public:
  virtual ~ResilientApp() = default;
  /// Every active process, at start and when a spare is recruited: allocate
  /// and register state with ctx.store().
  /// \param ctx this process's view of fx (the same object for the whole run)
  virtual void setup(Context& ctx) { (void)ctx; }
  /// A fresh start only (no checkpoint to restore): fill initial state.
  /// \param ctx this process's view of fx (the same object for the whole run)
  virtual void initialize(Context& ctx) { (void)ctx; }
  /// One iteration; collective over ctx.comm(). Return true when done (all
  /// ranks must agree, e.g. from a reduction).
  /// \param ctx this process's view of fx (the same object for the whole run)
  /// \param iteration the step to run: 0 first, then +1 per step; after a restore, the
  ///   restored version's iteration (steps since it run again)
  /// \return true when this was the last step, the same on every rank
  virtual bool step(Context& ctx, std::int64_t iteration) = 0;
  /// After the last step, on every active rank, before shutdown. May
  /// communicate: a failure inside is repaired like any other (rollback to
  /// the last checkpoint, the steps since replayed, finish() called again).
  /// \param ctx this process's view of fx (the same object for the whole run)
  virtual void finish(Context& ctx) { (void)ctx; }
  /// Spares ran out under the shrink policy: ctx.size() is smaller now.
  /// Re-decompose and return the iteration to resume at. Derived comms,
  /// failure callbacks and the store's registrations of the old
  /// decomposition are dropped before this runs, so register them again
  /// (setup()). ctx.store().restore_resized() hands over the last checkpoint
  /// as the old ranks wrote it (docs/user-guide.md: "the resize() protocol"); return its
  /// iteration. The default starts again from scratch: setup + initialize,
  /// iteration 0.
  /// \param ctx this process's view of fx (the same object for the whole run)
  /// \return the iteration the next step runs, the same on every rank
  virtual std::int64_t resize(Context& ctx);
  /// Static members (DataStore::add_static) that a restore could not give
  /// back: a rank died together with the holder of its copy, the version
  /// came from node-local storage or HDF5 (which hold none), or resize()
  /// re-decomposed the state. Called after the dynamic state is restored,
  /// before the next step, on every rank of ctx.comm() (it may communicate);
  /// `missing` is true where this rank's static members hold nothing valid
  /// (setup() may have sized and zero-filled them): recompute them there.
  /// Return true once rebuilt. The default returns false, and fx then
  /// applies recovery.on_lost_checkpoint (stop: exit 4 naming the members;
  /// restart: initialize() at iteration 0): never a resume on stale data.
  /// \param ctx this process's view of fx (the same object for the whole run)
  /// \param missing true on the ranks whose static members must be recomputed
  /// \return true once they are rebuilt (on this rank); false: fx applies the policy above
  virtual bool rebuild_static(Context& ctx, bool missing);
  /// After every restore, once the registered state is back (and static
  /// members rebuilt) and before the first resumed step: on every rank of
  /// ctx.comm(), survivors and recruited spares alike, and on every rank
  /// of a job that started from a checkpoint. Collective, so it may
  /// communicate; a failure inside is repaired like any other (after a
  /// repair's restore: the state restored again and restored() called
  /// again; after resize(), as a failure in the first step after it).
  /// Rebuild here what is
  /// derived from the registered state and was not registered (ghost
  /// atoms, cell bins, neighbour lists, communication plans): on every
  /// rank, so that a recruited rank and a survivor hold the same
  /// (docs/user-guide.md: "State that is not registered"). Not called after
  /// a fresh start (initialize() runs instead) nor when the default
  /// resize() starts again.
  /// \param ctx this process's view of fx (the same object for the whole run)
  /// \param info the version restored and how (see RestoreInfo)
  virtual void restored(Context& ctx, const RestoreInfo& info) {
    (void)ctx;
    (void)info;
  }
  /// Whether a commit may be taken once `iteration` steps are done. A
  /// commit the policy wants (checkpoint.memory.every, fixed or auto) is
  /// put off to the first iteration where this returns true, so commits
  /// fall where the app's own cycle allows (say, right after a neighbour
  /// list rebuild). It must give the same answer on every rank (a function
  /// of the iteration). The default allows every iteration. Explicit
  /// ctx.store().commit() calls are not asked.
  /// \param ctx this process's view of fx (the same object for the whole run)
  /// \param iteration the steps done so far (the version a commit now would hold)
  /// \return true to allow the commit the policy wants now; false to put it off
  virtual bool can_checkpoint(Context& ctx, std::int64_t iteration) {
    (void)ctx;
    (void)iteration;
    return true;
  }
};

namespace detail {
/// What fx::run<App> knows of App at compile time.
struct AppTraits {
  const std::vector<std::string>* keys = nullptr;  ///< App::config_keys(), when declared
  bool rebuilds_static = true;                     ///< App overrides rebuild_static
};
int run_app(const std::function<std::unique_ptr<ResilientApp>()>& make, int argc, char** argv,
            const AppTraits& traits);
/// Whether App (or a class between it and ResilientApp) overrides
/// rebuild_static: &App::rebuild_static names ResilientApp's otherwise.
template <class App>
constexpr bool overrides_rebuild_static() {
  return !std::is_same_v<decltype(&App::rebuild_static), bool (ResilientApp::*)(Context&, bool)>;
}
template <class App, class = void>
struct declares_config_keys : std::false_type {};
template <class App>
struct declares_config_keys<App, std::void_t<decltype(App::config_keys())>> : std::true_type {};
}  // namespace detail

/// Own MPI and Kokkos, read the configuration, run the app through failures.
/// Returns the process exit code (see docs/architecture.md).
///
/// A process initialises Kokkos and makes the App (its default constructor)
/// only once it is active: an active rank at start, a spare when it is
/// recruited, on the device fx chose for it (docs/gpu.md, "Devices and
/// spares"). A spare never recruited does neither. So the constructor runs
/// after Kokkos::initialize (it may allocate Views), on active ranks only,
/// at different times: it must not communicate.
///
/// An app may declare the keys of its `app:` section,
/// \code
///   static std::vector<std::string> config_keys() { return {"nx", "steps"}; }
/// \endcode
/// and fx then rejects any other key (from the file, FX_CFG_APP__*, or
/// --fx-set app.*) like one of its own: one line naming where it was set and
/// the nearest known key, exit 2, before any MPI communication.
/// Errors do not leave it: they end the job with their exit code.
/// \tparam App the application, a default-constructible ResilientApp
/// \param argc main()'s argument count
/// \param argv main()'s arguments; fx and Kokkos take their options out (Context::args has
///   the rest)
/// \return the process exit code (an fx::ExitCode's value), for main() to return
template <class App>
int run(int argc, char** argv) {
  const auto make = [] { return std::make_unique<App>(); };
  detail::AppTraits traits;
  traits.rebuilds_static = detail::overrides_rebuild_static<App>();
  std::vector<std::string> keys;
  if constexpr (detail::declares_config_keys<App>::value) {
    keys = App::config_keys();
    traits.keys = &keys;
  }
  return detail::run_app(make, argc, argv, traits);
}

}  // namespace fx
