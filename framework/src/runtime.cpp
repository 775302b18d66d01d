#include "runtime.hpp"

#include <fx/clock.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/detail/status.hpp>
#include <fx/detail/text.hpp>
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx/report_access.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <numeric>

#include "deadline.hpp"

namespace fx::detail {
namespace {

// The step loop tests the world watch at most this often: MPI_Test runs
// Open MPI's progress engine, which yields the processor when it finds
// nothing (oversubscribed nodes), so a test every step cost short steps a
// context switch (minife's default problem: 0.3 ms steps on 4 ranks).
constexpr double kWatchPeriodS = 1e-3;

Phase phase_of(StorePoint point) {
  switch (point) {
    case StorePoint::commit_begin:
      return Phase::checkpoint;
    case StorePoint::commit_save:
      return Phase::commit_save;
    case StorePoint::commit_posted:
      return Phase::commit_posted;
    case StorePoint::commit_agree:
      return Phase::commit_agree;
    case StorePoint::node_write:
      return Phase::node_write;
    case StorePoint::restore_load:
      break;
  }
  return Phase::restore_load;
}

// Where an active process resumes after a repair: a setup or a resize not
// done yet stays due; a recruited spare runs setup(), a shrink resize().
Stage after_repair(Stage now, bool recruited, bool shrunk) {
  const bool setup = recruited || now == Stage::setup || now == Stage::setup_resize;
  const bool resize = shrunk || now == Stage::resize || now == Stage::setup_resize;
  if (setup) return resize ? Stage::setup_resize : Stage::setup;
  return resize ? Stage::resize : Stage::restore;
}

// The runtime's bit of RepairRequest::carried, beside the store's
// (StoreAccess::facts): set on a process that is not inside a resize. The
// repair ANDs it, so it is clear when any was: every active process then
// resizes, a recruit and a survivor that had finished too (else one would
// restore() while the others re-decompose, and their collectives differ).
constexpr int kNotResizing = 1 << 3;
static_assert((kNotResizing & StoreAccess::kUnused) == 0 && kNotResizing < (1 << kCarriedBits));

}  // namespace

Runtime::Runtime(Config config, std::vector<std::string> args, AppMaker make, DeviceSession& session,
                 bool app_rebuilds_static)
    : config_(std::move(config)),
      args_(std::move(args)),
      make_(std::move(make)),
      session_(session),
      ctx_(*this),
      store_(StoreAccess::make(config_.checkpoint)),
      comms_(*this),
      recorder_(report_),
      app_rebuilds_static_(app_rebuilds_static) {
  // The store's own injection points, at the iteration of the version
  // concerned (an asynchronous commit agrees steps later), else the
  // runtime's.
  StoreAccess::set_fault_hook(*store_, [this](StorePoint point, std::int64_t iteration) {
    fault_point(phase_of(point), iteration >= 0 ? iteration : iteration_);
  });
}

Runtime::~Runtime() = default;

// fx's own start-up is an injection point too (world targets only): it
// comes before any table exists, so an injector of its own fires it.
void Runtime::start_fault_point() const {
  const auto& specs = config_.inject.failures;
  if (std::none_of(specs.begin(), specs.end(),
                   [](const InjectionSpec& s) { return s.phase == Phase::start; }))
    return;
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  log::set_identity('w', rank, size);  // no role yet
  Injector(config_.inject, rank, size, {}).at(Phase::start, -1, -1, 0, nullptr);
}

int Runtime::init_world() {
  start_fault_point();
  comms_.start(members_.start(config_.spares, session_.visible()));
  if (session_.user_choice().empty())
    devices_.start(members_.hosts(), members_.device_counts(), members_.members());
  if (logical_rank() >= 0) StoreAccess::set_comm(*store_, app_comm());
  injector_ = Injector(config_.inject, members_.world_rank(), members_.world_size(), members_.spare_ranks());
  if (injector_.armed())
    injector_.set_buddy_distance(placed_buddy_distance());  // runs without injections skip it
  control_.watch.post(world());
  members_.publish_identity();
  // A failure this early goes straight to a repair (as one in start-up's own
  // collectives, which every survivor learnt of).
  if (members_.lost_at_start()) return members_.start_error();
  // Nobody leaves start-up (a spare may be killed the moment it idles) while
  // others still need it in the collectives above, and all leave it the same
  // way: a repair's revoke of the app communicator reached a process still
  // activating it, and Open MPI crashed there (ompi_comm_revoke_local, in
  // MPI_Comm_split). An agreement completes only once every live process
  // has contributed, so none is still making its communicators then.
  if (!ulfm::active()) return MPI_Barrier(world());  // a failure ends the job anyway
  const ulfm::Agreement a = ulfm::agree_value(world(), logical_rank() < 0 || app_comm().valid());
  if (a.rc != MPI_SUCCESS) return a.rc;
  return a.flag ? MPI_SUCCESS : MPI_ERR_OTHER;  // an app communicator failed somewhere
}

void Runtime::log_start() {
  report_.set_config(config_, logical_size(), config_.spares.count, members_.world_size());
  if (!args_.empty()) report_.set_app(args_[0].substr(args_[0].find_last_of('/') + 1));
  // The same on every process (each loaded the same sources): said once.
  if (members_.world_rank() == 0)
    for (const auto& note : config_.notes) log::warn("{}", note);
  if (!ulfm::active() && members_.world_rank() == 0) {
    log::warn(
        "fault tolerance is off (not launched with mpiexec --with-ft ulfm, or MPI without ULFM): "
        "a process failure will end the job");
  }
  log::info("{} + {} on {} processes; checkpoint every {} iterations",
            detail::counted(logical_size(), "active rank"), detail::counted(config_.spares.count, "spare"),
            members_.world_size(), config_.checkpoint.memory.every);
}

void Runtime::execute() {
  recorder_.start();
  const int start_rc = init_world();
  recorder_.phase("start", recorder_.since_start());  // until every process had started
  log_start();
  bool repair_pending = start_rc != MPI_SUCCESS;
  if (repair_pending)
    on_failure(world(), start_rc, members_.lost_at_start() ? "start-up collectives" : "start-up agreement");
  try {
    while (true) {
      try {
        if (repair_pending) {
          recover();
          repair_pending = false;
        }
        if (role() != Role::spare) {
          run_active();
          break;
        }
        if (idle_as_spare()) break;
      } catch (const ProcessFailure& e) {
        if (!failing()) on_failure(MPI_COMM_NULL, MPI_ERR_OTHER, "an fx call");
        log::debug("caught ProcessFailure: {} ({}:{})", e.what(), e.file(), e.line());
        repair_pending = true;
      } catch (const JobEnded&) {
        throw;
      } catch (const std::exception& e) {
        on_error(e);
        repair_pending = true;
      }
    }
  } catch (const JobEnded& e) {
    end_job(e);
    return;
  }
  finish_job();
}

// Other ranks may be blocked waiting for this one: revoke, and let the
// repair's agreement carry the verdict to every live process.
void Runtime::on_error(const std::exception& e) {
  const auto* cfg = dynamic_cast<const ConfigError*>(&e);
  const bool lost = dynamic_cast<const CheckpointLost*>(&e) != nullptr;
  // A checkpoint lost, or a repair that gave up (recovery.max_rounds): the
  // job stops because of failures (4), not an error of the app's (1).
  const bool gave_up = dynamic_cast<const RecoveryFailed*>(&e) != nullptr;
  verdict_.fatal = e.what();
  verdict_.fatal_code = cfg ? ExitCode::usage : lost || gave_up ? ExitCode::aborted : ExitCode::error;
  if (!cfg && !lost && !gave_up) log::error("{}", verdict_.fatal);  // else one line, at the end
  if (lost) recorder_.stopped(store_->last_restore_stats());        // a repair it ends was done all the same
  on_failure(MPI_COMM_NULL, MPI_ERR_OTHER, "an unrecoverable error");
}

void Runtime::on_failure(MPI_Comm, int rc, const char* call) {
  if (!comms_.revoked()) recorder_.detected(call, rc);
  comms_.revoke_all(world());    // the world too: wakes the idle spares
  StoreAccess::revoke(*store_);  // its own comm: a rank in a store transfer wakes too
}

// Only a repair started elsewhere (it revokes the world) ends a wait in an
// agreement. A process death alone does not: the agreement completes
// without the dead and raises the failure consistently when it had not
// contributed. Leaving on a death that came after its contribution split
// the job (seen at 64+8: a rank died just after the last agreement, and the
// ranks that had not yet learnt its result left it for a repair alone).
bool Runtime::interrupted() {
  int rc = MPI_SUCCESS;
  if (control_.watch.test(rc)) {
    if (rc == MPI_SUCCESS) {
      control_.watch.post(world());  // a stray control message; nothing to do with repair
      return false;
    }
    if (ulfm::is_revoked(rc)) return true;
  }
  return ulfm::comm_revoked(world());
}

void Runtime::check_world_watch() {
  int rc = MPI_SUCCESS;
  if (!control_.watch.test(rc)) return;
  if (rc == MPI_SUCCESS) {
    log::warn("unexpected control message {} on an active rank; ignored", control_.watch.message());
    control_.watch.post(world());
    return;
  }
  check_world(rc, "world watch");
}

void Runtime::check_world(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  on_failure(world(), rc, call);
  throw ProcessFailure(fmt::format("{} returned {}", call, ulfm::error_name(rc)), {}, __FILE__, __LINE__);
}

bool Runtime::idle_as_spare() {
  injector_.at(Phase::spare_idle, -1, -1, logical_size(), nullptr);
  while (true) {
    const int rc = idle_wait(control_.watch, config_.spares.idle, config_.spares.poll_interval_ms);
    if (rc == MPI_SUCCESS && control_.watch.message() == kReleaseMessage) return true;
    // A death (not a revoke) is left to the active ranks while any is alive:
    // they see it too and revoke the world, or they have finished and their
    // release may still be behind the failure notice. A spare starting the
    // repair here would race that release (and abort a finished job).
    if (ulfm::is_proc_failed(rc) && members_.active_rank_alive()) {
      if (!control_.watch.posted()) control_.watch.post(world());
      continue;
    }
    on_failure(world(), rc, "spare wait");
    throw ProcessFailure(fmt::format("spare woken: {}", ulfm::error_name(rc)), {}, __FILE__, __LINE__);
  }
}

void Runtime::fault_point(Phase phase) { fault_point(phase, iteration_); }

void Runtime::fault_point(Phase phase, std::int64_t iteration) {
  if (injector_.armed()) injector_.at(phase, iteration, logical_rank(), logical_size(), store_.get());
}

// A restore-phase spec names the iteration the job was at when the failure
// struck: the furthest survivor's, which a recruit has not seen (its own is
// 0), so it could never be killed inside its first restore. Collective only
// when the schedule, the same everywhere, has such a spec.
void Runtime::restore_fault_point() {
  const Phase phase = restore_phase();
  const auto& schedule = injector_.schedule();
  const bool named = std::any_of(schedule.begin(), schedule.end(), [&](const InjectionSpec& s) {
    return s.phase == phase && s.iteration >= 0;
  });
  if (phase != Phase::restore || !named) {
    fault_point(phase);
    return;
  }
  fault_point(phase, app_comm().allreduce(iteration_, MPI_MAX));
}

void Runtime::checkpoint(std::int64_t iteration) {
  iteration_ = iteration;
  store_->commit(iteration_);  // Phase::checkpoint first; finishes the previous one when still in flight
  record_committed();
  recorder_.checkpointed(iteration_, store_->last_commit_stats());
}

void Runtime::record_committed() {
  auto st = StoreAccess::take_committed(*store_);
  if (!st) return;
  recorder_.committed(*st);
  // What the commit cost the app in all, for the automatic interval.
  pacing_.commit_cost = st->seconds + st->background_seconds;
  pacing_.background_s += st->background_seconds;
}

void Runtime::reached(std::int64_t iteration) {
  iteration_ = iteration;
  reached_ = std::max(reached_, iteration_);
  recorder_.resumed(iteration_);
  // Reinit's iteration point ends a step: an asynchronous commit moves on.
  if (StoreAccess::progress(*store_)) record_committed();
}

// A spare initialises neither Kokkos nor its device, nor makes the app,
// until it is recruited: then on the device the map gave it.
void Runtime::activate() {
  if (app_) return;
  const double t = now();
  const int w = members_.world_rank();
  session_.start(devices_.device(w));
  app_ = make_();
  const std::string how = session_.user_choice().empty()
                              ? devices_.describe(w)
                              : fmt::format("device chosen by {}", session_.user_choice());
  log::debug("active: Kokkos initialised and the app made in {:.1f} ms ({})", 1e3 * (now() - t), how);
}

void Runtime::run_active() {
  activate();
  comms_.rebuild_if_stale();
  prepare();
  {
    StepsTimer timer(recorder_);
    steps(timer);
    const double tf0 = now();
    StoreAccess::flush(*store_);  // the last commit in flight: committed before the end
    record_committed();
    timer.checkpointed(now() - tf0);
  }
  // Done only when every rank is done and alive.
  app_comm().agree(1);
  const double tf = now();
  app_->finish(ctx_);
  recorder_.phase("finish", now() - tf);
  // Which specs never fired anywhere (a bit flip fires on one rank alone).
  std::vector<int> pending = injector_.pending_flags();
  if (!pending.empty()) app_comm().allreduce(pending.data(), pending.data(), pending.size(), MPI_MIN);
  injector_.fired_elsewhere(pending);
  // A failure inside finish() is repaired like any other; after this
  // agreement nobody enters a repair any more, so the spares can go.
  app_comm().agree(1);
}

void Runtime::prepare() {
  if (stage_ == Stage::setup || stage_ == Stage::setup_resize) {
    const double t = now();
    app_->setup(ctx_);
    stepped_ = false;
    recorder_.phase("setup", now() - t);
    warn_static_unrebuilt();
    stage_ = stage_ == Stage::setup ? Stage::restore : Stage::resize;
  }
  if (stage_ == Stage::resize) resize();
  if (stage_ == Stage::restore && app_restores_) stage_ = Stage::steps;
  if (stage_ == Stage::restore) restore_or_initialize();
}

// resize() and setup() make the app's registrations anew, so what was
// registered before goes: derived comms, failure callbacks, store members.
void Runtime::forget_app_registrations() {
  comms_.drop_registrations();
  StoreAccess::clear(*store_);
}

Runtime::Resized Runtime::resize() {
  forget_app_registrations();  // the old decomposition's
  fault_point(Phase::restore);
  const double t = now();
  StoreAccess::take_resized_restore(*store_);  // an earlier attempt's
  const std::optional<std::int64_t> resumed = resize_app();
  iteration_ = resumed.value_or(0);
  stage_ = Stage::steps;
  // An app that re-decomposes its checkpoint (DataStore::restore_resized)
  // resumes at its iteration; the default resize() starts again at 0.
  const std::optional<CheckpointStats> st = StoreAccess::take_resized_restore(*store_);
  bool restored = resumed && st && st->iteration == iteration_;
  bool lost = !resumed;  // the policy has had its say
  // Static members describe the old decomposition: none was given back.
  std::vector<int> everyone(static_cast<std::size_t>(logical_size()));
  std::iota(everyone.begin(), everyone.end(), 0);
  if (restored && !rebuild_statics(everyone, "resize() re-decomposed the state")) {
    initialize_app();
    restored = false;
    lost = true;
  }
  if (restored) {
    log::info("resuming at iteration {} on {} ranks (checkpoint of {} ranks, {})", iteration_, logical_size(),
              st->old_size, to_string(st->level));
  } else {
    log::info("resize on {} ranks: starting again at iteration {}", logical_size(), iteration_);
  }
  record_start(restored ? st->level : CheckpointLevel::none, restored ? st->old_size : 0);
  recorder_.restored(now() - t, iteration_, restored ? st->level : CheckpointLevel::none);
  sync_interval();
  if (restored) after_restore({iteration_, st->level, !stepped_, true});
  return restored ? Resized::restored : lost ? Resized::lost : Resized::fresh;
}

// The app's resize(). A checkpoint no level kept (restore_resized threw
// CheckpointLost, on every rank alike: its plan is everyone's) is
// recovery.on_lost_checkpoint's, as after a repair that kept the size.
// nullopt: lost, and started again at 0 under `restart`. An app whose
// parameters do not fit the ranks a shrink left (md's sub-boxes narrower
// than its cutoff) stops the job because of the failures (4), not as a
// mistake in its configuration (2), which fitted the size it was launched on.
std::optional<std::int64_t> Runtime::resize_app() {
  try {
    return app_->resize(ctx_);
  } catch (const CheckpointLost& e) {
    apply_lost_policy(e.what());  // stop: thrown again, naming the policy
  } catch (const ConfigError& e) {
    const int launched = members_.world_size() - config_.spares.count;
    if (logical_size() >= launched) throw;
    recorder_.stopped(store_->last_restore_stats());  // the repair was done: a policy ends the job
    FX_THROW(RecoveryFailed,
             fmt::format("the app cannot go on with the {} left after the shrink from {}: {}; "
                         "recovery.on_exhausted is 'shrink' (more spares, spares.count = {}, would have "
                         "replaced the failed ranks)",
                         detail::counted(logical_size(), "rank"), launched, e.what(), config_.spares.count));
  }
  // restart: the app's resize() stopped part-way; its registrations anew.
  forget_app_registrations();
  app_->setup(ctx_);
  StoreAccess::start_over(*store_);
  initialize_app();
  return std::nullopt;
}

// A cold start on another number of ranks than the newest checkpoint's (a
// relaunch on fewer hosts under recovery.on_exhausted: shrink, or by hand),
// or a repair before such a start's first commit: the app's resize()
// re-decomposes it (restore_resized), as after a shrink.
void Runtime::resize_at_start(int old_size) {
  if (logical_rank() == 0 && recoveries_ == 0) {  // at a repair the store said it
    log::info("the newest checkpoint was written by {} ranks, this job has {}: resizing", old_size,
              logical_size());
  }
  stage_ = Stage::resize;
  if (resize() == Resized::fresh && launch_attempt() > 1) {
    // The app's resize() did not bring it back (the default one starts
    // again): after a relaunch that is work lost, not a fresh start.
    const std::string what = fmt::format(
        "checkpoint lost: the newest version was written by {} ranks and the app's resize() did not "
        "restore it on {} (override ResilientApp::resize with DataStore::restore_resized, "
        "docs/user-guide.md: "
        "\"Shrinking: the resize() protocol\")",
        old_size, logical_size());
    apply_lost_policy(what);
  }
}

// The store's newest version, when a repair or a restart from storage may
// have one; nullopt when there is none (or none to look for).
std::optional<std::int64_t> Runtime::restore_at_start() {
  const auto& ck = config_.checkpoint;
  const bool may_restore = recoveries_ > 0 || (ck.hdf5.restart && (ck.hdf5.every > 0 || ck.node.every > 0));
  if (!may_restore) return std::nullopt;
  try {
    return StoreAccess::restore(*store_);
  } catch (const CheckpointLost&) {
    record_start(CheckpointLevel::none, 0);  // what it passed over, in the report of the job it ends
    throw;
  }
}

void Runtime::restore_or_initialize() {
  restore_fault_point();
  const double t = now();
  std::optional<std::int64_t> restored = restore_at_start();
  // At the start, or at a repair before the first commit after a start
  // that resumed this way: a version of another job size.
  if (!restored && store_->last_restore_stats().other_size > 0) {
    resize_at_start(store_->last_restore_stats().other_size);
    return;
  }
  if (!restored) {
    if (recoveries_ > 0 || launch_attempt() > 1) on_lost_checkpoint();
    initialize_app();
  } else if (!rebuild_statics()) {
    initialize_app();
    restored.reset();
  }
  iteration_ = restored.value_or(0);
  record_start(restored ? store_->last_restore_level() : CheckpointLevel::none, 0);
  recorder_.restored(now() - t, iteration_, restored ? store_->last_restore_level() : CheckpointLevel::none);
  // The job's start (not a recruit's recovery, which must stay short): the
  // versions' buffers now, not in the first commits' steps.
  if (recoveries_ == 0) {
    const double tr = now();
    StoreAccess::reserve(*store_);
    recorder_.phase("reserve", now() - tr);
  }
  sync_interval();
  if (restored) after_restore({iteration_, store_->last_restore_level(), !stepped_, false});
  stage_ = Stage::steps;
}

// A cold start's record: the version it resumed from (after a resize at
// start, the old job size's) and the versions passed over on the way.
void Runtime::record_start(CheckpointLevel level, int old_size) {
  if (recoveries_ > 0) return;  // a recruit's restore is the repair's
  const bool resumed = level != CheckpointLevel::none;
  report_.set_start({level, resumed ? iteration_ : 0, old_size, store_->last_restore_stats().skipped});
}

// Static members that no override of rebuild_static() can bring back end the
// job (on_lost_checkpoint) after a double failure, any shrink or a restart
// from storage: nothing at compile time or in the first runs says so.
void Runtime::warn_static_unrebuilt() {
  const auto& statics = store_->static_members();
  if (warned_static_ || app_rebuilds_static_ || statics.empty() || logical_rank() != 0) return;
  warned_static_ = true;
  std::vector<std::string> names;
  for (const auto& m : statics) names.push_back("'" + m.name + "'");
  log::warn(
      "static member(s) {} are registered and the app does not override ResilientApp::rebuild_static: after "
      "a "
      "rank dies with the holder of its copy, any shrink or a restart from node-local storage or HDF5, "
      "recovery.on_lost_checkpoint applies ('{}') (docs/user-guide.md)",
      fmt::join(names, ", "), to_string(config_.recovery.on_lost_checkpoint));
}

// Collective: a failure inside is repaired, and the restore done again.
void Runtime::after_restore(const RestoreInfo& info) {
  fault_point(Phase::restored);
  const double t = now();
  app_->restored(ctx_, info);
  recorder_.phase("restored", now() - t);
}

void Runtime::initialize_app() {
  const double t = now();
  app_->initialize(ctx_);
  recorder_.phase("initialize", now() - t);
  iteration_ = 0;
}

bool Runtime::rebuild_statics() {
  const CheckpointStats& rs = store_->last_restore_stats();
  const std::string why = rs.level == CheckpointLevel::memory
                              ? "each died together with the rank holding its copy"
                              : std::string("the version came from ") +
                                    (rs.level == CheckpointLevel::node ? "node-local storage" : "HDF5") +
                                    ", which holds no static members";
  return rebuild_statics(rs.static_lost, why);
}

// A rank must never step on static data the restore did not deliver
// (setup() may have sized and zero-filled them: a wrong answer, silently).
bool Runtime::rebuild_statics(const std::vector<int>& lost, const std::string& why) {
  const auto& statics = store_->static_members();
  if (statics.empty() || lost.empty()) return true;
  const double t = now();
  const bool here = std::find(lost.begin(), lost.end(), logical_rank()) != lost.end();
  const int rebuilt = app_comm().allreduce(app_->rebuild_static(ctx_, here) ? 1 : 0, MPI_MIN);
  std::vector<std::string> names;
  for (const auto& m : statics) names.push_back("'" + m.name + "'");
  const std::string what = fmt::format("static member(s) {} of logical rank(s) {} were not restored ({})",
                                       fmt::join(names, ", "), fmt::join(lost, ", "), why);
  if (rebuilt == 1) {
    recorder_.phase("rebuild_static", now() - t);
    if (logical_rank() == 0)
      log::info("{}: rebuilt by the app (rebuild_static) in {:.2f} ms", what, (now() - t) * 1e3);
    return true;
  }
  apply_lost_policy(what + " and the app does not rebuild them (override ResilientApp::rebuild_static)");
  StoreAccess::start_over(*store_);
  return false;
}

std::optional<std::int64_t> Runtime::restore_checkpoint() {
  restore_fault_point();
  const double t = now();
  std::optional<std::int64_t> it = StoreAccess::restore(*store_);
  if (it && !rebuild_statics()) it.reset();  // restart: the resilient function starts afresh
  recorder_.restored(now() - t, it.value_or(0), it ? store_->last_restore_level() : CheckpointLevel::none);
  if (it) iteration_ = *it;
  sync_interval();
  return it;
}

// The step loop up to the app's last step.
void Runtime::steps(StepsTimer& timer) {
  bool first = true;
  double t_mark = now();  // since the last commit (or the resume): the step time
  int stepped = 0;
  while (true) {
    if (const double t = now(); t - control_.tested >= kWatchPeriodS) {
      control_.tested = t;
      check_world_watch();
    }
    fault_point(Phase::compute);
    stepped_ = true;  // even a step a failure cut short changed what the app holds
    const bool done = app_->step(ctx_, iteration_);
    if (comms_.revoked_unseen()) unchecked_failure();
    if (first) {
      recorder_.resumed(iteration_);
      StoreAccess::start_reprotection(*store_);
      // After the resume, not on the repair's path: the record grows with
      // the run (a progress entry per step). Every rank has finished the
      // step's collectives, so the donor and the recipients meet here.
      history_.run(members_, report_, [this](int rc, const char* call) { check_world(rc, call); });
      report_.set_placement(placement());  // the layout an abort inside a repair reports
    }
    ++iteration_;
    reached_ = std::max(reached_, iteration_);
    // An asynchronous commit moves on (its snapshot must end with this step).
    if (StoreAccess::progress(*store_)) record_committed();
    if (logical_rank() == 0) progress_.step(iteration_, now(), first);
    first = false;
    report_.add_progress(recorder_.since_start(), iteration_);
    ++stepped;
    if (done) return;
    if (commit_due()) {
      const double tc = now();
      checkpoint(iteration_);
      const double spent = now() - tc;
      timer.checkpointed(spent);
      // An asynchronous commit costs the app mostly after the call (step-end
      // progress): the interval weighs the last committed one's whole cost,
      // and the steps' time without it.
      if (pacing_.interval.automatic())
        choose_interval(std::max(spent, pacing_.commit_cost), (tc - t_mark - pacing_.background_s) / stepped);
      t_mark = now();
      pacing_.background_s = 0;
      stepped = 0;
    }
  }
}

// The app's own MPI calls met a failure they did not check (fx's error
// handler revoked the communicator): the step is abandoned at its end, its
// results never committed.
void Runtime::unchecked_failure() {
  on_failure(app_comm().raw(), MPI_ERR_OTHER, "the application's own MPI calls");
  throw ProcessFailure(fmt::format("step {} met a process failure in MPI calls that did not check it "
                                   "(fx's error handler revoked the communicator); the step is abandoned",
                                   iteration_),
                       {}, __FILE__, __LINE__);
}

// Every rank picks the same next commit from what all measured (maxima).
void Runtime::choose_interval(double commit_s, double step_s) {
  std::array<double, 4> m{commit_s, step_s, recorder_.since_start(), static_cast<double>(recoveries_)};
  app_comm().allreduce(m.data(), m.data(), m.size(), MPI_MAX);
  const int before = pacing_.interval.every();
  const auto c = pacing_.interval.committed(iteration_, {m[0], m[1], m[2], static_cast<int>(m[3])});
  report_.set_checkpoint_interval(c.every, c.waste);
  if (c.every != before)
    log::info(
        "checkpoint interval (auto): every {} iterations (commit {:.2f} ms, step {:.2f} ms, MTBF {:.1f} s: "
        "Daly's optimum; expected waste {:.1f} %)",
        c.every, c.commit_s * 1e3, c.step_s * 1e3, c.mtbf_s, c.waste * 100);
}

// After a restore, in one reduction: a recovered rank has no interval of its
// own yet (every: auto), so it takes the survivors'; and how far the job had
// got before the failure (ctx.replaying()). A process that stepped knows
// what it completed (and printed) itself: a step whose collectives
// completed here may have been abandoned (a revoke that came after them),
// or completed here and been abandoned elsewhere. A recruited process
// takes the furthest any survivor got.
void Runtime::sync_interval() {
  pacing_.owed = false;
  if (!pacing_.interval.automatic() && recoveries_ == 0) return;
  std::array<std::int64_t, 2> m{pacing_.interval.every(), reached_};
  app_comm().allreduce(m.data(), m.data(), m.size(), MPI_MAX);
  if (pacing_.interval.automatic()) pacing_.interval.resumed(iteration_, static_cast<int>(m[0]));
  replay_until_ = stepped_ ? reached_ : m[1];
}

// The policy's commit, put off while the app's can_checkpoint() says no.
bool Runtime::commit_due() {
  if (!pacing_.owed && !pacing_.interval.due(iteration_)) return false;
  pacing_.owed = !app_->can_checkpoint(ctx_, iteration_);
  return !pacing_.owed;
}

// Versions had been committed and none survives: days of work may be gone,
// so only an explicit policy starts the run again.
void Runtime::on_lost_checkpoint() {
  const CheckpointStats& st = store_->last_restore_stats();
  if (!st.lost) {  // the same on every rank: said once
    if (logical_rank() == 0)
      log::warn("no checkpoint to restore (none was committed yet): starting again from iteration 0");
    return;
  }
  // After a relaunch by the supervisor (no repair in this job) the copies
  // were node-local: a rank's image and its partner copy on two hosts.
  const std::string lost =
      recoveries_ > 0
          ? fmt::format(
                "in-memory copy survived for logical rank(s) {} (each died with the rank(s) holding "
                "its redundancy)",
                st.lost_ranks)
          : fmt::format(
                "node-local copy survived on the live hosts for logical rank(s) {} (each was lost "
                "with its host and the host of its partner copy)",
                st.lost_ranks);
  // Name HDF5 only where it could have served.
  const std::string disk = config_.checkpoint.hdf5.every > 0
                               ? "no HDF5 version is usable"
                               : "the HDF5 level is off (checkpoint.hdf5.every = 0)";
  const std::string what = st.lost_ranks.empty()
                               ? std::string("checkpoint lost: no usable version in memory or on disk")
                               : "checkpoint lost: no " + lost + " and " + disk;
  apply_lost_policy(what);
}

// recovery.on_lost_checkpoint: end the job (stop), or start again at 0.
void Runtime::apply_lost_policy(const std::string& what) {
  if (config_.recovery.on_lost_checkpoint == LostCheckpointPolicy::stop) {
    FX_THROW(CheckpointLost, what + "; recovery.on_lost_checkpoint is 'stop'");
  }
  if (logical_rank() == 0)
    log::warn("{}; recovery.on_lost_checkpoint is 'restart': starting again from iteration 0", what);
  report_.add_restart_from_scratch();
}

void Runtime::recover() {
  if (!failing()) on_failure(MPI_COMM_NULL, MPI_ERR_OTHER, "recover");
  control_.watch.cancel();
  fault_point(Phase::repair);
  const double t0 = now();
  const RepairResult res = repair_world();
  // The old communicators are revoked; the new ones take their slots. The
  // failures are on record before a fatal end too: in its report, and in
  // failures_seen(), which keeps its end out of MPI_Finalize (Open MPI's
  // finalize after a failure hung 4 runs in about 50 at 8+2).
  const std::vector<Identity> before = members_.adopt(res);
  recorder_.failures(res.failed, members_, iteration_, logical_rank() == 0);
  end_if_fatal(res);
  devices_.repair(before, res.members, res.failed);
  comms_.free_revoked();
  end_if_exhausted(res);
  history_.plan(before, res.members);
  take_roles(res);
  ++recoveries_;
  control_.watch.post(world());
  members_.publish_identity();
  recorder_.repaired(res, t0, members_);
  comms_.notify(
      {world_ranks(res.failed), logical_ranks(res.failed), logical_size(), res.shrunk, recoveries_});
}

RepairResult Runtime::repair_world() {
  Deadline guard(config_.recovery.timeout_s, "repair (recovery.timeout_s)");
  RepairRequest req;
  req.world = world();
  req.members = members_.members();
  req.my_logical = logical_rank();
  req.active_size = logical_size();
  req.shrink_when_exhausted = config_.recovery.on_exhausted == ExhaustedPolicy::shrink;
  req.max_rounds = config_.recovery.max_rounds;
  req.after_shrink = [this] { fault_point(Phase::repair_rebuild); };
  req.my_fatal = !verdict_.fatal.empty();
  // restore()'s fresh rule rides on the agreement (take_roles hands the
  // store the outcome): a spare's store was never used.
  const bool active = logical_rank() >= 0;
  const bool resizing = active && (stage_ == Stage::resize || stage_ == Stage::setup_resize);
  req.carried = (active ? StoreAccess::facts(*store_) : StoreAccess::kUnused) | (resizing ? 0 : kNotResizing);
  return repair(req);
}

// Ended by an error: the lowest process that hit one speaks for the job.
void Runtime::end_if_fatal(const RepairResult& res) {
  if (!res.fatal) return;
  const bool speaker =
      !res.fatal_world_ranks.empty() && res.fatal_world_ranks.front() == members_.world_rank();
  if (speaker && verdict_.fatal_code == ExitCode::usage) print_usage_error(verdict_.fatal);
  FX_THROW(
      JobEnded,
      speaker ? verdict_.fatal : fmt::format("ended by an error on world rank(s) {}", res.fatal_world_ranks),
      speaker ? verdict_.fatal_code : ExitCode::error, speaker);
}

void Runtime::end_if_exhausted(const RepairResult& res) {
  const std::size_t failures = members_.failed().size();
  if (!res.exhausted && static_cast<int>(failures) <= config_.recovery.max_failures) return;
  const std::vector<int> failed_world = world_ranks(res.failed);
  const std::string why =
      res.exhausted
          ? fmt::format(
                "{} process(es) failed (world ranks {}, logical ranks {}) and {} spare(s) were left; "
                "recovery.on_exhausted is 'abort'",
                res.failed.size(), failed_world, logical_ranks(res.failed), members_.spare_ranks().size())
          : fmt::format("{} failures in this run exceed recovery.max_failures = {} (last: world ranks {})",
                        failures, config_.recovery.max_failures, failed_world);
  FX_THROW(JobEnded, why, ExitCode::aborted, members_.speaks_for_job());
}

// This process's new place: role, app communicator, what is due before
// its next step; the injector learns who died.
void Runtime::take_roles(const RepairResult& res) {
  const bool recruited = members_.take_role(res);
  comms_.install(res.app, role() == Role::survivor);
  if (logical_rank() >= 0) {
    StoreAccess::set_comm(*store_, app_comm());
    StoreAccess::agreed(*store_, res.carried);
    stage_ = after_repair(stage_, recruited, res.shrunk || !(res.carried & kNotResizing));
  }
  std::vector<FailedProcess> injected;
  for (const auto& f : res.failed) injected.push_back({f.world_rank, f.logical});
  injector_.on_repair(injected, iteration_);  // who died: counted as when they were killed
  if (injector_.armed()) injector_.set_buddy_distance(placed_buddy_distance());
}

// The distance the store keeps buddy copies at on the current placement
// (it moves them off a rank's own host), from the hosts every process knows.
int Runtime::placed_buddy_distance() const {
  const auto& memory = config_.checkpoint.memory;
  std::vector<std::string> hosts(static_cast<std::size_t>(std::max(logical_size(), 0)));
  for (const auto& m : members_.members())
    if (m.logical >= 0 && m.logical < logical_size())
      hosts[static_cast<std::size_t>(m.logical)] = members_.host(m.world_rank);
  const int d = memory.scheme == MemoryScheme::buddy
                    ? StoreAccess::buddy_distance_for(hosts, memory.buddy_distance)
                    : 0;
  return d > 0 ? d : memory.buddy_distance;
}

void Runtime::finish_job() {
  // Every active rank releases the spares: they wait for a release while
  // any active rank lives, so one that dies right here cannot strand them.
  release_spares(world(), members_.spare_ranks());
  verdict_.code = recoveries_ > 0 ? ExitCode::survived : ExitCode::ok;
  verdict_.text = recoveries_ > 0
                      ? fmt::format("finished after surviving {} failure(s)", members_.failed().size())
                      : std::string("finished");
  verdict_.speaker = -1;
  control_.watch.cancel();
  fault_point(Phase::finalize);
}

int Runtime::conclude_job(bool clean, const std::vector<int>& died) {
  // Processes lost after the last step (say, in the finalize phase): part
  // of the record, and an ok run becomes a survived one.
  std::vector<int> died_world;
  std::vector<FailedProcess> retired;  // their kill specs fired
  for (int r : died) {
    const Identity& m = members_.members()[static_cast<std::size_t>(r)];
    died_world.push_back(m.world_rank);
    retired.push_back({m.world_rank, m.logical});
    report_.add_failure(
        {m.world_rank, m.logical, members_.host(m.world_rank), recorder_.since_start(), -1, iteration_});
  }
  members_.remove(died);
  injector_.on_repair(retired, iteration_);
  // They count with the failures repaired before (the summary said
  // "surviving 1 failure(s)" above "failures: 2").
  if (!died.empty() && verdict_.code == ExitCode::survived && recoveries_ > 0) {
    verdict_.text =
        fmt::format("finished after surviving {} failure(s), {} of them during shutdown, after the last step",
                    members_.failed().size() + died.size(), died.size());
  }
  // A job the supervisor relaunched after losing hosts survived failures
  // even when this attempt saw none.
  if (launch_attempt() > 1 && verdict_.code == ExitCode::ok) {
    verdict_.code = ExitCode::survived;
    verdict_.text =
        fmt::format("finished after the supervisor relaunched the job (attempt {})", launch_attempt());
  }
  if (!clean && !failures_seen() && verdict_.code == ExitCode::ok) {
    verdict_.code = ExitCode::survived;
    verdict_.text =
        fmt::format("finished; world rank(s) {} failed during shutdown, after the last step", died_world);
  }
  const bool speaker = verdict_.speaker >= 0 ? verdict_.speaker == 1 : members_.speaks_for_job();
  if (speaker) {
    if (!died.empty()) log::warn("{}", verdict_.text);
    report_.set_phase_time("total", recorder_.since_start());
    report_.set_placement(placement());
    injector_.report_unfired(report_);
    conclude(verdict_.code, verdict_.text);
    // A usage error was printed once already (fx: error: ...), as before
    // MPI started; the report file, when asked for, still has it.
    if (verdict_.code != ExitCode::usage) std::fputs(report_.summary().c_str(), stdout);
    std::fflush(stdout);
  }
  return static_cast<int>(verdict_.code);
}

Placement Runtime::placement() const {
  Placement p;
  p.buddy_distance = logical_rank() >= 0 ? store_->buddy_distance() : 0;
  const int n = members_.active_size();
  p.ranks.resize(static_cast<std::size_t>(std::max(n, 0)));
  for (const Identity& m : members_.members()) {
    if (m.logical < 0 || m.logical >= n) {
      p.spares.emplace_back(m.world_rank, members_.host(m.world_rank));
      continue;
    }
    auto& r = p.ranks[static_cast<std::size_t>(m.logical)];
    r.logical = m.logical;
    r.world_rank = m.world_rank;
    r.host = members_.host(m.world_rank);
    r.device = devices_.device(m.world_rank);
  }
  if (p.buddy_distance > 0) {
    for (auto& r : p.ranks) {
      r.copy_holder = (r.logical + p.buddy_distance) % n;
      r.copy_host = p.ranks[static_cast<std::size_t>(r.copy_holder)].host;
    }
  }
  return p;
}

void Runtime::conclude(ExitCode code, const std::string& text) {
  ReportAccess::set_exit(report_, code, text);
  if (!config_.report_path.empty()) {
    try {
      report_.write(config_.report_path);
    } catch (const Error& e) {
      // A report the user asked for and did not get is an error, whatever
      // the run did (a worse verdict already says more).
      log::error("{}", e.what());
      if (code == ExitCode::ok || code == ExitCode::survived) {
        code = ExitCode::error;
        ReportAccess::set_exit(report_, code, fmt::format("{}; {}", text, e.what()));
      }
      report_.set_unwritten();  // the summary must not point at it
    }
  }
  write_status(code, report_.exit_text());
}

void Runtime::end_job(const JobEnded& e) {
  if (e.code() == ExitCode::aborted && e.report()) log::error("{}", e.what());
  verdict_.code = e.code();
  verdict_.text = e.what();
  verdict_.speaker = e.report() ? 1 : 0;
  control_.watch.cancel();
}

}  // namespace fx::detail
