#pragma once
// What the run record and the log say about failures, repairs and
// checkpoints: the run's start, detection and kill stamps, one line and one
// report entry per lost process, the repair line, and the recovery record
// that the first step after a repair completes.
#include <fx/data_store/store.hpp>
#include <fx/recovery/repair.hpp>
#include <fx/report.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "membership.hpp"

namespace fx::detail {

class RecoveryRecorder {
 public:
  explicit RecoveryRecorder(Report& report) : report_(report) {}
  RecoveryRecorder(const RecoveryRecorder&) = delete;
  RecoveryRecorder& operator=(const RecoveryRecorder&) = delete;

  void start();  // the run's time origin
  double since_start() const;
  void phase(const std::string& name, double seconds) { report_.add_phase_time(name, seconds); }

  // The first sign of a failure (later ones until the repair are the same one).
  void detected(const char* call, int rc);
  // The processes a repair found lost, at the iteration this process was at;
  // `loud`: this process speaks for the job (warn instead of debug). A
  // repair still pending goes to the report as interrupted.
  void failures(const std::vector<Identity>& failed, const Membership& m, std::int64_t iteration, bool loud);
  // The repair (started at t0) is done; an active process then times its
  // restore and first step into the pending record.
  void repaired(const RepairResult& res, double t0, const Membership& m);
  bool pending() const { return pending_.has_value(); }
  void restored(double seconds, std::int64_t iteration, CheckpointLevel level);
  // The first step after the repair is done: the record goes to the report.
  void resumed(std::int64_t iteration);
  // A policy ends the job before that step (`restore`: what the restore
  // read): the record goes to the report, marked stopped.
  void stopped(const CheckpointStats& restore);
  void checkpointed(std::int64_t iteration, const CheckpointStats& st);
  // An asynchronous commit became committed: its record gets the totals.
  void committed(const CheckpointStats& st);

 private:
  Report& report_;
  double t_start_ = 0;
  double t_detect_ = 0;
  double t_kill_ = -1;   // newest victim's kill stamp
  double t_origin_ = 0;  // the pending record's kill (or detection)
  std::optional<RecoveryRecord> pending_;

  void interrupted();  // the pending record ends without a resumed step
};

// Times the step loop into the `steps` and `checkpoint` phases however it
// ends: an attempt a failure cut short counts too, so an aborted run's time
// line has its steps.
class StepsTimer {
 public:
  explicit StepsTimer(RecoveryRecorder& recorder);
  StepsTimer(const StepsTimer&) = delete;
  StepsTimer& operator=(const StepsTimer&) = delete;
  ~StepsTimer();
  void checkpointed(double seconds) { checkpoint_s_ += seconds; }

 private:
  RecoveryRecorder& recorder_;
  double t0_;
  double checkpoint_s_ = 0;
};

}  // namespace fx::detail
