#include "recovery_recorder.hpp"

#include <fx/clock.hpp>
#include <fx/inject.hpp>
#include <fx/log.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace fx::detail {
void RecoveryRecorder::start() { t_start_ = now(); }

double RecoveryRecorder::since_start() const { return now() - t_start_; }

void RecoveryRecorder::detected(const char* call, int rc) {
  t_detect_ = now();
  log::debug("failure detected: {} returned {}", call, ulfm::error_name(rc));
}

// One line per failure for the job, and the failure in every process's
// record, at the iteration survivors were at (a recruited spare's is
// replaced by a survivor's record anyway).
void RecoveryRecorder::failures(const std::vector<Identity>& failed, const Membership& m,
                                std::int64_t iteration, bool loud) {
  interrupted();
  t_kill_ = -1;
  const double t_now = now();
  for (const auto& f : failed) {
    const KillStamp stamp = read_kill_stamp(f.world_rank);
    const double tk = stamp.time;
    // A process that died after the failure this repair started from (in
    // the repair) was found by the repair itself, by now at the latest: it
    // was never stamped with the earlier detection (a negative latency).
    const bool later = tk > t_detect_;
    const double td = later ? t_now : t_detect_;
    if (!later) t_kill_ = std::max(t_kill_, tk);
    const std::string& host = m.host(f.world_rank);
    log::emit(loud ? log::Level::warn : log::Level::debug,
              "process failure: world rank {} ({}) on {}, detected {:.3f} s into the run{}{}", f.world_rank,
              f.logical >= 0 ? fmt::format("logical rank {}", f.logical) : std::string("a spare"),
              host.empty() ? std::string("a host it never named (lost in start-up)") : "host " + host,
              td - t_start_,
              tk > 0 ? fmt::format(", {:.1f} ms after the kill", (td - tk) * 1e3) : std::string(),
              later ? " (it died during the repair)" : "");
    // An injected kill's own iteration (what its injection line says);
    // survivors may have stood at another one.
    report_.add_failure({f.world_rank, f.logical, host, (tk > 0 ? tk : td) - t_start_, tk > 0 ? td - tk : -1,
                         stamp.iteration >= 0 ? stamp.iteration : iteration});
  }
}

namespace {

// What a repair did, for the log and the report.
RecoveryAction recovery_action(bool shrunk, const std::vector<int>& failed_logical) {
  if (shrunk) return RecoveryAction::shrink;
  if (failed_logical.empty()) return RecoveryAction::rollback;
  const bool spares_only =
      std::all_of(failed_logical.begin(), failed_logical.end(), [](int l) { return l < 0; });
  return spares_only ? RecoveryAction::spare_lost : RecoveryAction::replace;
}

}  // namespace

void RecoveryRecorder::repaired(const RepairResult& res, double t0, const Membership& m) {
  const double t1 = now();
  const RecoveryAction action = recovery_action(res.shrunk, logical_ranks(res.failed));
  log::info(
      "recovered in {:.1f} ms ({} round(s); revoke {:.2f}, shrink {:.2f}, agree {:.2f}, rebuild {:.2f} ms): "
      "{} logical ranks, {} spare(s) left, action {}",
      (t1 - t0) * 1e3, res.rounds, res.times.revoke * 1e3, res.times.shrink * 1e3, res.times.agree * 1e3,
      res.times.rebuild * 1e3, m.active_size(), m.spare_ranks().size(), to_string(action));
  // A spare that was not recruited has no step to time; the report is rank 0's.
  if (m.logical() < 0) return;
  RecoveryRecord rec;
  rec.start = t0 - t_start_;
  rec.detect_s = t_kill_ > 0 ? t_detect_ - t_kill_ : -1;
  rec.revoke_s = res.times.revoke;
  rec.shrink_s = res.times.shrink;
  rec.agree_s = res.times.agree;
  rec.rebuild_s = res.times.rebuild;
  rec.rounds = res.rounds;
  rec.failed_world_ranks = world_ranks(res.failed);
  rec.failed_logical_ranks = logical_ranks(res.failed);
  rec.action = action;
  rec.new_size = m.active_size();
  pending_ = rec;
  t_origin_ = t_kill_ > 0 ? t_kill_ : t_detect_;
}

// A failure before the last repair's first step: that repair happened all
// the same, so it is recorded as far as it got (every survivor does this,
// so a recruited rank 0 learns it with the history).
void RecoveryRecorder::interrupted() {
  if (!pending_) return;
  pending_->interrupted = true;
  pending_->total_s = t_detect_ > t_origin_ ? t_detect_ - t_origin_ : -1;
  report_.add_recovery(*pending_);
  pending_.reset();
}

void RecoveryRecorder::restored(double seconds, std::int64_t iteration, CheckpointLevel level) {
  if (!pending_) return;
  pending_->restore_s = seconds;
  pending_->restored_iteration = iteration;
  pending_->restored_level = level;
}

void RecoveryRecorder::resumed(std::int64_t iteration) {
  if (!pending_) return;
  // Kill (or detection) -> first completed step after the repair.
  pending_->total_s = now() - t_origin_;
  log::info("resumed at iteration {}: {:.1f} ms after the {}", iteration, pending_->total_s * 1e3,
            t_kill_ > 0 ? "kill" : "detection");
  report_.add_recovery(*pending_);
  pending_.reset();
}

void RecoveryRecorder::stopped(const CheckpointStats& restore) {
  if (!pending_) return;
  pending_->stopped = true;
  if (pending_->restored_level == CheckpointLevel::none && restore.level != CheckpointLevel::none) {
    pending_->restored_level = restore.level;
    pending_->restored_iteration = restore.iteration;
  }
  pending_->total_s = now() - t_origin_;
  report_.add_recovery(*pending_);
  pending_.reset();
}

void RecoveryRecorder::checkpointed(std::int64_t iteration, const CheckpointStats& st) {
  report_.add_checkpoint({iteration, now() - t_start_ - st.seconds, st.level, st.bytes, st.seconds,
                          st.seconds > 0 ? static_cast<double>(st.bytes) / st.seconds : 0});
  log::debug("checkpoint of iteration {} ({}): {} bytes in {:.3f} ms", iteration, to_string(st.level),
             st.bytes, st.seconds * 1e3);
}

void RecoveryRecorder::committed(const CheckpointStats& st) {
  report_.set_checkpoint_committed(st.iteration, st.committed_seconds, st.background_seconds);
}

StepsTimer::StepsTimer(RecoveryRecorder& recorder) : recorder_(recorder), t0_(now()) {}

StepsTimer::~StepsTimer() {
  recorder_.phase("steps", now() - t0_ - checkpoint_s_);
  recorder_.phase("checkpoint", checkpoint_s_);
}

}  // namespace fx::detail
