#include "runtime.hpp"

#include <fx/clock.hpp>
#include <fx/detail/status.hpp>
#include <fx/log.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "deadline.hpp"

namespace fx::detail {
namespace {

IdleMode idle_mode_of(SpareIdle s) {
  switch (s) {
    case SpareIdle::block: return IdleMode::block;
    case SpareIdle::yield: return IdleMode::yield;
    case SpareIdle::sleep: break;
  }
  return IdleMode::sleep;
}

// What a repair did, for the log and the report (RecoveryAction).
RecoveryAction recovery_action(bool shrunk, const std::vector<int>& failed_logical) {
  if (shrunk) return RecoveryAction::shrink;
  if (failed_logical.empty()) return RecoveryAction::rollback;
  const bool spares_only =
      std::all_of(failed_logical.begin(), failed_logical.end(), [](int l) { return l < 0; });
  return spares_only ? RecoveryAction::spare_lost : RecoveryAction::replace;
}

double read_kill_stamp(int world_rank) {
  const std::string path = kill_stamp_path(world_rank);
  if (path.empty()) return -1;
  std::ifstream in(path);
  double t = -1;
  if (in >> t) return t;
  return -1;
}

// fx's own message on world_ (the watch listens on kControlTag only).
constexpr int kHistoryTag = 0x0f10;

void free_comm(MPI_Comm& c) {
  if (c != MPI_COMM_NULL && c != MPI_COMM_WORLD) MPI_Comm_free(&c);
  c = MPI_COMM_NULL;
}

}  // namespace

Runtime::Runtime(Config config, std::vector<std::string> args, ResilientApp& app)
    : config_(std::move(config)),
      args_(std::move(args)),
      app_(app),
      ctx_(*this),
      store_(std::make_unique<DataStore>(config_.checkpoint)),
      idle_mode_(idle_mode_of(config_.spares.idle)) {}

Runtime::~Runtime() = default;

double Runtime::since_start() const { return now() - t_start_; }

void Runtime::add_phase(const std::string& name, double seconds) { report_.add_phase_time(name, seconds); }

bool Runtime::init_world() {
  MPI_Comm_dup(MPI_COMM_WORLD, &world_);
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &world_rank_);
  MPI_Comm_size(world_, &world_size_);

  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(world_size_) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, world_);
  for (int r = 0; r < world_size_; ++r) hosts_.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);

  const int spares = config_.spares.count;
  const auto spare_ranks = choose_spares(world_size_, spares,
                                           config_.spares.placement == SparePlacement::spread ? "spread" : "last",
                                           node_ids(world_));
  int next = 0;
  for (int r = 0; r < world_size_; ++r) {
    const bool spare = std::binary_search(spare_ranks.begin(), spare_ranks.end(), r);
    members_.push_back({r, spare ? -1 : next++});
  }
  active_size_ = world_size_ - spares;
  logical_ = members_[static_cast<std::size_t>(world_rank_)].logical;
  role_ = logical_ >= 0 ? Role::initial : Role::spare;

  MPI_Comm app = MPI_COMM_NULL;
  MPI_Comm_split(world_, logical_ >= 0 ? 0 : MPI_UNDEFINED, logical_, &app);
  if (app != MPI_COMM_NULL) MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
  comm_ = Comm(std::make_shared<CommSlot>(CommSlot{app, this}));
  if (logical_ >= 0) store_->set_comm(comm_);
  injector_ = Injector(config_.inject, world_rank_, world_size_, spares);
  watch_.post(world_);
  publish_identity();
  // Nobody leaves start-up (a spare may be killed the moment it idles) while
  // others still need it in the collectives above; a failure this early goes
  // straight to a repair.
  return MPI_Barrier(world_) == MPI_SUCCESS;
}

void Runtime::publish_identity() {
  if (logical_ >= 0) log::set_identity('r', logical_, active_size_);
  else log::set_identity('s', world_rank_, world_size_);
}

void Runtime::execute() {
  t_start_ = now();
  const bool started = init_world();
  report_.set_config(config_, active_size_, config_.spares.count, world_size_);
  if (!args_.empty()) report_.set_app(args_[0].substr(args_[0].find_last_of('/') + 1));
  for (const auto& note : config_.notes) log::warn("{}", note);
  if (!ulfm::active()) {
    log::warn("fault tolerance is off (not launched with mpiexec --with-ft ulfm, or MPI without ULFM): "
              "a process failure will end the job");
  }
  log::info("{} active ranks + {} spares on {} processes; checkpoint every {} iterations",
            active_size_, config_.spares.count, world_size_, config_.checkpoint.memory.every);

  bool repair_pending = !started;
  if (!started) on_failure(world_, MPI_ERR_OTHER, "start-up barrier");
  try {
  while (true) {
    try {
      if (repair_pending) {
        recover();
        repair_pending = false;
      }
      if (role_ == Role::spare) {
        if (idle_as_spare()) break;
      } else {
        run_active();
        break;
      }
    } catch (const ProcessFailure& e) {
      if (!failing_) on_failure(MPI_COMM_NULL, MPI_ERR_OTHER, "an fx call");
      log::debug("caught ProcessFailure: {} ({}:{})", e.what(), e.file(), e.line());
      repair_pending = true;
    } catch (const JobEnded&) {
      throw;
    } catch (const std::exception& e) {
      // Other ranks may be blocked waiting for this one: revoke, and let the
      // repair's identity exchange carry the verdict to every live process.
      const auto* cfg = dynamic_cast<const ConfigError*>(&e);
      const bool lost = dynamic_cast<const CheckpointLost*>(&e) != nullptr;
      fatal_ = e.what();
      fatal_code_ = cfg ? ExitCode::usage : lost ? ExitCode::aborted : ExitCode::error;
      if (!cfg && !lost) log::error("{}", fatal_);
      on_failure(MPI_COMM_NULL, MPI_ERR_OTHER, "an unrecoverable error");
      repair_pending = true;
    }
  }
  } catch (const JobEnded& e) {
    end_job(e);
    return;
  }
  finish_job();
}

void Runtime::on_failure(MPI_Comm, int rc, const char* call) {
  if (!failing_) {
    failing_ = true;
    t_detect_ = now();
    failing_call_ = call;
    log::debug("failure detected: {} returned {}", call, ulfm::error_name(rc));
  }
  revoke_all();
}

void Runtime::revoke_all() {
  if (comm_.valid()) ulfm::revoke(comm_.raw());
  for (auto& d : derived_) {
    if (d.slot->raw != MPI_COMM_NULL) ulfm::revoke(d.slot->raw);
  }
  ulfm::revoke(world_);  // wakes the idle spares
}

bool Runtime::interrupted() {
  int rc = MPI_SUCCESS;
  if (!watch_.test(rc)) return false;
  if (rc == MPI_SUCCESS) {
    watch_.post(world_);  // a stray control message; nothing to do with repair
    return false;
  }
  return true;
}

void Runtime::check_world_watch() {
  int rc = MPI_SUCCESS;
  if (!watch_.test(rc)) return;
  if (rc == MPI_SUCCESS) {
    log::warn("unexpected control message {} on an active rank; ignored", watch_.message());
    watch_.post(world_);
    return;
  }
  on_failure(world_, rc, "world watch");
  throw ProcessFailure(fmt::format("world watch returned {}", ulfm::error_name(rc)), {}, __FILE__, __LINE__);
}

bool Runtime::idle_as_spare() {
  injector_.at(Phase::spare_idle, -1, -1, active_size_, nullptr);
  while (true) {
    const int rc = idle_wait(watch_, idle_mode_, config_.spares.poll_interval_ms);
    if (rc == MPI_SUCCESS && watch_.message() == kReleaseMessage) return true;
    // A death (not a revoke) is left to the active ranks while any is alive:
    // they see it too and revoke the world, or they have finished and their
    // release may still be behind the failure notice. A spare starting the
    // repair here would race that release (and abort a finished job).
    if (ulfm::is_proc_failed(rc) && active_rank_alive()) {
      if (!watch_.posted()) watch_.post(world_);
      continue;
    }
    on_failure(world_, rc, "spare wait");
    throw ProcessFailure(fmt::format("spare woken: {}", ulfm::error_name(rc)), {}, __FILE__, __LINE__);
  }
}

bool Runtime::active_rank_alive() {
  std::vector<int> failed;
  if (ulfm::ack_failed(world_, failed) != MPI_SUCCESS) return false;
  for (std::size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].logical >= 0 && std::find(failed.begin(), failed.end(), static_cast<int>(r)) == failed.end())
      return true;
  }
  return false;
}

void Runtime::fault_point(Phase phase) {
  if (injector_.armed()) injector_.at(phase, iteration_, logical_, active_size_, store_.get());
}

void Runtime::checkpoint() {
  fault_point(Phase::checkpoint);
  store_->commit(iteration_);
  const auto& st = store_->last_commit_stats();
  report_.add_checkpoint({iteration_, now() - t_start_ - st.seconds, st.level, st.bytes, st.seconds,
                          st.seconds > 0 ? static_cast<double>(st.bytes) / st.seconds : 0});
  log::debug("checkpoint of iteration {} ({}): {} bytes in {:.3f} ms", iteration_, st.level, st.bytes,
             st.seconds * 1e3);
}

void Runtime::run_active() {
  // Before any collective of the app's: the donor and the recipients
  // would otherwise wait on each other (a survivor replays a split that a
  // recruited spare makes only in setup()).
  hand_over_history();
  if (needs_rebuild_) rebuild_derived();
  if (needs_setup_) {
    const double t = now();
    app_.setup(ctx_);
    add_phase("setup", now() - t);
    needs_setup_ = false;
  }
  if (resized_) {
    // resize() re-runs the app's registrations (setup), so what the old
    // decomposition registered goes: derived comms and failure callbacks.
    drop_registrations();
    fault_point(Phase::restore);
    const double t = now();
    const CheckpointStats before = store_->last_restore_stats();
    iteration_ = app_.resize(ctx_);
    resized_ = false;
    needs_restore_ = false;
    // An app that re-decomposes its checkpoint (DataStore::restore_resized)
    // resumes at its iteration; the default resize() starts again at 0.
    const CheckpointStats& st = store_->last_restore_stats();
    const bool restored = st.old_size > 0 && st.iteration == iteration_ &&
                          (st.iteration != before.iteration || st.seconds != before.seconds);
    if (restored) {
      log::info("resuming at iteration {} on {} ranks (checkpoint of {} ranks, {})", iteration_, active_size_,
                st.old_size, st.level);
    } else {
      log::info("resize on {} ranks: starting again at iteration {}", active_size_, iteration_);
    }
    if (pending_recovery_) {
      pending_recovery_->restore_s = now() - t;
      pending_recovery_->restored_iteration = iteration_;
      pending_recovery_->restored_level = restored ? st.level : std::string("none");
    }
  }
  if (app_restores_) needs_restore_ = false;
  if (needs_restore_) {
    fault_point(recoveries_ > 0 ? Phase::restore : Phase::start_restore);
    const bool may_restore = recoveries_ > 0 || (config_.checkpoint.hdf5.every > 0 && config_.checkpoint.hdf5.restart);
    const double t = now();
    std::optional<std::int64_t> restored;
    if (may_restore) restored = store_->restore();
    if (restored) {
      iteration_ = *restored;
    } else {
      if (recoveries_ > 0) on_lost_checkpoint();
      const double ti = now();
      app_.initialize(ctx_);
      add_phase("initialize", now() - ti);
      iteration_ = 0;
    }
    if (pending_recovery_) {
      pending_recovery_->restore_s = now() - t;
      pending_recovery_->restored_iteration = restored ? *restored : 0;
      pending_recovery_->restored_level = restored ? store_->last_restore_level() : std::string("none");
    }
    needs_restore_ = false;
  }

  const int every = config_.checkpoint.memory.every;
  bool first = true;
  const double t_steps = now();
  double t_ckpt = 0;
  while (true) {
    check_world_watch();
    fault_point(Phase::compute);
    const bool done = app_.step(ctx_, iteration_);
    if (first) note_resumed();
    first = false;
    ++iteration_;
    report_.add_progress(since_start(), iteration_);
    if (done) break;
    if (every > 0 && iteration_ % every == 0) {
      const double tc = now();
      checkpoint();
      t_ckpt += now() - tc;
    }
  }
  add_phase("steps", now() - t_steps - t_ckpt);
  add_phase("checkpoint", t_ckpt);
  // Done only when every rank is done and alive.
  app_comm().agree(1);
  const double tf = now();
  app_.finish(ctx_);
  add_phase("finish", now() - tf);
  // A failure inside finish() is repaired like any other; after this
  // agreement nobody enters a repair any more, so the spares can go.
  app_comm().agree(1);
}

// Versions had been committed and none survives: days of work may be gone,
// so only an explicit policy starts the run again.
void Runtime::on_lost_checkpoint() {
  const CheckpointStats& st = store_->last_restore_stats();
  if (!st.lost) {
    log::warn("no checkpoint to restore (none was committed yet): starting again from iteration 0");
    return;
  }
  const std::string what =
      st.lost_ranks.empty()
          ? std::string("checkpoint lost: no usable version in memory or on disk")
          : fmt::format("checkpoint lost: no in-memory copy survived for logical rank(s) {} (each died with the "
                        "rank(s) holding its redundancy) and no HDF5 version is usable",
                        st.lost_ranks);
  if (config_.recovery.on_lost_checkpoint == LostCheckpointPolicy::stop) {
    FX_THROW(CheckpointLost, what + "; recovery.on_lost_checkpoint is 'stop'");
  }
  log::warn("{}; recovery.on_lost_checkpoint is 'restart': starting again from iteration 0", what);
  report_.add_restart_from_scratch();
}

void Runtime::note_resumed() {
  if (!pending_recovery_) return;
  // Kill (or detection) -> first completed step after the repair.
  pending_recovery_->total_s = now() - (t_kill_ > 0 ? t_kill_ : t_detect_);
  log::info("resumed at iteration {}: {:.1f} ms after the {}", iteration_, pending_recovery_->total_s * 1e3,
            t_kill_ > 0 ? "kill" : "detection");
  report_.add_recovery(*pending_recovery_);
  pending_recovery_.reset();
}

void Runtime::drop_registrations() {
  for (auto& d : derived_) free_comm(d.slot->raw);
  derived_.clear();
  callbacks_.clear();
  needs_rebuild_ = false;
}

void Runtime::rebuild_derived() {
  for (auto& d : derived_) {
    MPI_Comm c = MPI_COMM_NULL;
    const int rc = d.dup ? MPI_Comm_dup(comm_.raw(), &c) : MPI_Comm_split(comm_.raw(), d.color, d.key, &c);
    comm_.check(rc, d.dup ? "MPI_Comm_dup (derived rebuild)" : "MPI_Comm_split (derived rebuild)", __FILE__,
               __LINE__);
    if (c != MPI_COMM_NULL) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    d.slot->raw = c;
  }
  needs_rebuild_ = false;
}

Comm Runtime::derive(int color, int key, bool dup) {
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = dup ? MPI_Comm_dup(comm_.raw(), &c) : MPI_Comm_split(comm_.raw(), color, key, &c);
  comm_.check(rc, dup ? "MPI_Comm_dup" : "MPI_Comm_split", __FILE__, __LINE__);
  if (c != MPI_COMM_NULL) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  derived_.push_back({std::make_shared<CommSlot>(CommSlot{c, this}), color, key, dup});
  return Comm(derived_.back().slot);
}

std::vector<int> Runtime::failed_logical_ranks() const {
  std::vector<int> out;
  for (const auto& f : failed_) {
    if (f.logical >= 0) out.push_back(f.logical);
  }
  return out;
}

// One line per failure for the job (the new logical rank 0 speaks), and
// the failure in every process's record, at the iteration survivors were at
// (a recruited spare's is replaced by a survivor's record anyway).
void Runtime::record_failures(const std::vector<Identity>& failed) {
  for (const auto& f : failed) {
    const double tk = read_kill_stamp(f.world_rank);
    const std::string& host = hosts_[static_cast<std::size_t>(f.world_rank)];
    log::emit(logical_ == 0 ? log::Level::warn : log::Level::debug,
              "process failure: world rank {} ({}) on host {}, detected {:.3f} s into the run{}", f.world_rank,
              f.logical >= 0 ? fmt::format("logical rank {}", f.logical) : std::string("a spare"), host,
              t_detect_ - t_start_,
              tk > 0 ? fmt::format(", {:.1f} ms after the kill", (t_detect_ - tk) * 1e3) : std::string());
    report_.add_failure({f.world_rank, f.logical, host, (tk > 0 ? tk : t_detect_) - t_start_,
                         tk > 0 ? t_detect_ - tk : -1, iteration_});
  }
}

// Spares recruited by this repair hold only the failures and recoveries
// they saw while idle: the surviving active rank with the lowest logical
// rank sends them its whole record before the restore.
void Runtime::plan_history_handover(const std::vector<Identity>& before, const std::vector<Identity>& after) {
  // The last plan's recipients may not have got their record (a failure
  // during the handover): every process treats them as recipients again.
  const std::vector<int> unsure = std::move(history_recipients_);
  history_donor_ = -1;
  history_recipients_.clear();
  int donor_logical = -1;
  for (const auto& m : after) {
    if (m.logical < 0) continue;
    const auto was = std::find_if(before.begin(), before.end(),
                                  [&m](const Identity& b) { return b.world_rank == m.world_rank; });
    const bool survivor = was != before.end() && was->logical >= 0 &&
                          std::find(unsure.begin(), unsure.end(), m.world_rank) == unsure.end();
    if (!survivor) {
      history_recipients_.push_back(m.world_rank);
    } else if (donor_logical < 0 || m.logical < donor_logical) {
      donor_logical = m.logical;
      history_donor_ = m.world_rank;
    }
  }
  if (history_donor_ < 0) history_recipients_.clear();  // no survivor: nothing to hand over
  history_pending_ = !history_recipients_.empty();
}

void Runtime::hand_over_history() {
  const bool donor = history_donor_ == world_rank_;
  const bool recipient = std::find(history_recipients_.begin(), history_recipients_.end(), world_rank_) !=
                         history_recipients_.end();
  if (!history_pending_ || (!donor && !recipient)) return;
  history_pending_ = false;
  const int donor_world = history_donor_;
  const std::vector<int>& recipients = history_recipients_;
  // Ranks of world_ by MPI_COMM_WORLD rank.
  auto rank_of = [this](int world_rank) {
    for (std::size_t r = 0; r < members_.size(); ++r)
      if (members_[r].world_rank == world_rank) return static_cast<int>(r);
    return -1;
  };
  auto check = [this](int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    on_failure(world_, rc, call);
    throw ProcessFailure(fmt::format("{} returned {}", call, ulfm::error_name(rc)), {}, __FILE__, __LINE__);
  };
  if (donor) {
    const std::string text = report_.history_yaml();
    const unsigned long long size = text.size();
    for (int w : recipients) {
      check(MPI_Send(&size, 1, MPI_UNSIGNED_LONG_LONG, rank_of(w), kHistoryTag, world_), "MPI_Send (run record)");
      check(MPI_Send(text.data(), static_cast<int>(size), MPI_CHAR, rank_of(w), kHistoryTag, world_),
            "MPI_Send (run record)");
    }
    return;
  }
  unsigned long long size = 0;
  const int from = rank_of(donor_world);
  check(MPI_Recv(&size, 1, MPI_UNSIGNED_LONG_LONG, from, kHistoryTag, world_, MPI_STATUS_IGNORE),
        "MPI_Recv (run record)");
  std::string text(size, '\0');
  check(MPI_Recv(text.data(), static_cast<int>(size), MPI_CHAR, from, kHistoryTag, world_, MPI_STATUS_IGNORE),
        "MPI_Recv (run record)");
  report_.adopt_history(text);
}

void Runtime::recover() {
  if (!failing_) on_failure(MPI_COMM_NULL, MPI_ERR_OTHER, "recover");
  watch_.cancel();
  fault_point(Phase::repair);
  const double t0 = now();
  RepairResult res;
  {
    Deadline guard(config_.recovery.timeout_s, "repair (recovery.timeout_s)");
    RepairRequest req;
    req.world = world_;
    req.members = members_;
    req.my_logical = logical_;
    req.active_size = active_size_;
    req.shrink_when_exhausted = config_.recovery.on_exhausted == ExhaustedPolicy::shrink;
    req.max_rounds = config_.recovery.max_rounds;
    req.my_fatal = !fatal_.empty();
    res = repair(req);
  }
  if (!res.fatal_world_ranks.empty()) {
    // Ended by an error: the lowest process that hit one speaks for the job.
    const bool speaker = res.fatal_world_ranks.front() == world_rank_;
    if (speaker && fatal_code_ == ExitCode::usage) print_usage_error(fatal_);
    world_ = res.world;
    FX_THROW(JobEnded,
             speaker ? fatal_ : fmt::format("ended by an error on world rank(s) {}", res.fatal_world_ranks),
             speaker ? fatal_code_ : ExitCode::error, speaker);
  }

  // The old communicators are revoked; the new ones take their slots.
  free_comm(world_);
  MPI_Comm old_app = comm_.raw();
  free_comm(old_app);
  for (auto& d : derived_) free_comm(d.slot->raw);
  world_ = res.world;
  const std::vector<Identity> old_members = std::move(members_);
  members_ = res.members;
  failed_.insert(failed_.end(), res.failed.begin(), res.failed.end());

  std::vector<int> failed_world, failed_logical;
  std::vector<FailedProcess> injected;
  t_kill_ = -1;
  for (const auto& f : res.failed) {
    failed_world.push_back(f.world_rank);
    failed_logical.push_back(f.logical);
    injected.push_back({f.world_rank, f.logical});
    t_kill_ = std::max(t_kill_, read_kill_stamp(f.world_rank));
  }
  record_failures(res.failed);
  if (res.exhausted || static_cast<int>(failed_.size()) > config_.recovery.max_failures) {
    const auto spares_left =
        std::count_if(members_.begin(), members_.end(), [](const Identity& i) { return i.logical < 0; });
    const std::string why =
        res.exhausted
            ? fmt::format("{} process(es) failed (world ranks {}, logical ranks {}) and {} spare(s) were left; "
                          "recovery.on_exhausted is 'abort'",
                          res.failed.size(), failed_world, failed_logical, spares_left)
            : fmt::format("{} failures in this run exceed recovery.max_failures = {} (last: world ranks {})",
                          failed_.size(), config_.recovery.max_failures, failed_world);
    FX_THROW(JobEnded, why, ExitCode::aborted, speaks_for_job());
  }

  plan_history_handover(old_members, res.members);
  const Role before = role_;
  logical_ = res.my_logical;
  active_size_ = res.active_size;
  comm_.slot()->raw = res.app;
  if (logical_ < 0) {
    role_ = Role::spare;
  } else if (before == Role::spare) {
    role_ = Role::recovered;
    needs_setup_ = true;
  } else {
    role_ = Role::survivor;
    needs_rebuild_ = !derived_.empty();
  }
  if (logical_ >= 0) {
    store_->set_comm(comm_);
    if (res.shrunk) resized_ = true;
    else needs_restore_ = true;
  }
  injector_.on_repair(injected, iteration_);
  ++recoveries_;
  failing_ = false;
  watch_.post(world_);
  publish_identity();

  const double t1 = now();
  const RecoveryAction action = recovery_action(res.shrunk, failed_logical);
  log::info(
      "recovered in {:.1f} ms ({} round(s); revoke {:.2f}, shrink {:.2f}, agree {:.2f}, rebuild {:.2f} ms): "
      "{} logical ranks, {} spare(s) left, action {}",
      (t1 - t0) * 1e3, res.rounds, res.times.revoke * 1e3, res.times.shrink * 1e3, res.times.agree * 1e3,
      res.times.rebuild * 1e3, active_size_,
      std::count_if(members_.begin(), members_.end(), [](const Identity& i) { return i.logical < 0; }),
      to_string(action));
  {
    RecoveryRecord rec;
    rec.start = t0 - t_start_;
    rec.detect_s = t_kill_ > 0 ? t_detect_ - t_kill_ : -1;
    rec.revoke_s = res.times.revoke;
    rec.shrink_s = res.times.shrink;
    rec.agree_s = res.times.agree;
    rec.rebuild_s = res.times.rebuild;
    rec.rounds = res.rounds;
    rec.failed_world_ranks = failed_world;
    rec.failed_logical_ranks = failed_logical;
    rec.action = action;
    rec.new_size = active_size_;
    // A spare that was not recruited has no step to time; the report is rank 0's.
    if (logical_ >= 0) pending_recovery_ = rec;
  }

  const FailureEvent ev{failed_world, failed_logical, active_size_, res.shrunk, recoveries_};
  for (const auto& cb : callbacks_) cb(ev);
}

void Runtime::finish_job() {
  // Every active rank releases the spares: they wait for a release while
  // any active rank lives, so one that dies right here cannot strand them.
  std::vector<int> spares;
  for (std::size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].logical < 0) spares.push_back(static_cast<int>(r));
  }
  release_spares(world_, spares);
  verdict_.code = recoveries_ > 0 ? ExitCode::survived : ExitCode::ok;
  verdict_.text = recoveries_ > 0 ? fmt::format("finished after surviving {} failure(s)", failed_.size())
                                  : std::string("finished");
  verdict_.speaker = -1;
  watch_.cancel();
  fault_point(Phase::finalize);
}

// Who writes the verdict and the report: the live active rank with the
// lowest logical rank (every active rank holds the whole record), or, with
// no active rank left, the lowest live process.
bool Runtime::speaks_for_job() const {
  const bool any_active =
      std::any_of(members_.begin(), members_.end(), [](const Identity& m) { return m.logical >= 0; });
  if (!any_active) {
    return std::all_of(members_.begin(), members_.end(),
                       [this](const Identity& m) { return m.world_rank >= world_rank_; });
  }
  if (logical_ < 0) return false;
  return std::none_of(members_.begin(), members_.end(),
                      [this](const Identity& m) { return m.logical >= 0 && m.logical < logical_; });
}

int Runtime::conclude_job(bool clean, const std::vector<int>& died) {
  // Processes lost after the last step (say, in the finalize phase): part
  // of the record, and an ok run becomes a survived one.
  std::vector<int> died_world;
  for (int r : died) {
    const Identity& m = members_[static_cast<std::size_t>(r)];
    died_world.push_back(m.world_rank);
    report_.add_failure({m.world_rank, m.logical, hosts_[static_cast<std::size_t>(m.world_rank)],
                         since_start(), -1, iteration_});
  }
  std::vector<Identity> live;
  for (std::size_t r = 0; r < members_.size(); ++r)
    if (std::find(died.begin(), died.end(), static_cast<int>(r)) == died.end()) live.push_back(members_[r]);
  members_ = live;
  if (!clean && !failures_seen() && verdict_.code == ExitCode::ok) {
    verdict_.code = ExitCode::survived;
    verdict_.text = fmt::format("finished; world rank(s) {} failed during shutdown, after the last step", died_world);
  }
  const bool speaker = verdict_.speaker >= 0 ? verdict_.speaker == 1 : speaks_for_job();
  if (speaker) {
    if (!died.empty()) log::warn("{}", verdict_.text);
    report_.set_phase_time("total", since_start());
    conclude(verdict_.code, verdict_.text);
    std::fputs(report_.summary().c_str(), stdout);
    std::fflush(stdout);
  }
  return static_cast<int>(verdict_.code);
}

void Runtime::conclude(ExitCode code, const std::string& text) {
  report_.set_exit(code, text);
  if (!config_.report_path.empty()) {
    try {
      report_.write(config_.report_path);
    } catch (const Error& e) {
      // A report the user asked for and did not get is an error, whatever
      // the run did (a worse verdict already says more).
      log::error("{}", e.what());
      if (code == ExitCode::ok || code == ExitCode::survived) {
        code = ExitCode::error;
        report_.set_exit(code, fmt::format("{}; {}", text, e.what()));
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
  watch_.cancel();
}

MPI_Comm Runtime::release_world() {
  MPI_Comm w = world_;
  world_ = MPI_COMM_NULL;
  return w;
}

}  // namespace fx::detail
