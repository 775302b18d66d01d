#pragma once
// The runtime behind fx::run: runs the step loop and, after a failure, the
// repair, on top of four parts: the membership (who is in the job), the
// communicator registry (what the app communicates through), the recovery
// recorder (what the log and the report say) and the run record's handover
// to recruited spares. It also owns the data store, fault injection, the
// world watch and the report.
#include <fx/app.hpp>
#include <fx/inject.hpp>
#include <fx/recovery/repair.hpp>
#include <fx/spares/spare_pool.hpp>

#include <fx/detail/status.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint_interval.hpp"
#include "comm_registry.hpp"
#include "device_map.hpp"
#include "device_session.hpp"
#include "history_handover.hpp"
#include "membership.hpp"
#include "recovery_recorder.hpp"
#include "runtime_services.hpp"

namespace fx::detail {

// The job ends early but cleanly, every live process together: spares ran
// out under the abort policy (aborted), or a process hit an error no repair
// can fix (error / usage). `report` says whether this process writes the verdict.
class JobEnded : public RecoveryFailed {
 public:
  JobEnded(std::string what, ExitCode code, bool report, const char* file, int line)
      : RecoveryFailed(std::move(what), file, line), code_(code), report_(report) {}
  ExitCode code() const { return code_; }
  bool report() const { return report_; }

 private:
  ExitCode code_;
  bool report_;
};

// What an active process has still to do before its next step. It goes
// down this list; a repair sends it back up (a setup or a resize not done
// yet stays due).
enum class Stage {
  setup,         // the app's setup(), then a restore (start, a recruited spare)
  setup_resize,  // setup(), then resize() (a recruited spare in a shrink)
  resize,        // resize() onto fewer ranks (the job shrank)
  restore,       // the newest checkpoint, or initialize()
  steps,         // the step loop
};

// The commit interval and the costs it is chosen from (every: auto).
struct CommitPacing {
  CheckpointInterval interval;
  double commit_cost = 0;   // the last committed version's cost to the app (wait + after)
  double background_s = 0;  // asynchronous commits' time in step-end progress since the last commit
  bool owed = false;        // the policy wanted a commit the app's can_checkpoint() put off
};

// The control messages' receive on the world (a spare's release, a
// stray message) and when the step loop last tested it.
struct ControlWatch {
  Watch watch;
  double tested = -1;
};

// How the job ends on this process: the verdict execute() reached
// (conclude_job() makes it final) and this process's own unrecoverable
// error, which the next repair's agreement shares.
struct Verdict {
  ExitCode code = ExitCode::ok;
  std::string text;
  int speaker = -1;   // 1/0: this process writes it or not; -1: the lowest live active rank
  std::string fatal;  // this process's unrecoverable error ("": none)
  ExitCode fatal_code = ExitCode::error;
};

using AppMaker = std::function<std::unique_ptr<ResilientApp>()>;

class Runtime final : public RuntimeServices {
 public:
  // `make` makes the app once this process is active (a spare: when it is
  // recruited), after Kokkos is initialised through `session`.
  // `app_rebuilds_static`: the app overrides ResilientApp::rebuild_static
  // (fx::run<App> knows it at compile time).
  Runtime(Config config, std::vector<std::string> args, AppMaker make, DeviceSession& session,
          bool app_rebuilds_static = true);
  ~Runtime() override;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Run to completion. The caller then runs shutdown_agree() over world()
  // with failures_seen(), hands the processes that died meanwhile (ranks of
  // world()) to conclude_job(), which settles the one verdict (report,
  // summary, $FX_STATUS_FILE) and returns the exit code, and leaves.
  void execute();
  bool failures_seen() const { return recoveries_ > 0 || !members_.failed().empty(); }
  MPI_Comm world() const { return members_.world(); }
  int conclude_job(bool clean, const std::vector<int>& died_in_shutdown);
  MPI_Comm release_world() { return members_.release_world(); }

  // FailureHandler.
  void on_failure(MPI_Comm where, int rc, const char* call) override;
  bool interrupted() override;

  // What Context forwards to.
  const Comm& app_comm() const { return comms_.app(); }
  int logical_rank() const { return members_.logical(); }
  int logical_size() const { return members_.active_size(); }
  Role role() const { return members_.role(); }
  DataStore& store() { return *store_; }
  Report& report() override { return report_; }
  Comm derive(int color, int key, bool dup) { return comms_.derive(color, key, dup); }
  // The step about to run (or running) was completed before a failure took
  // the job back to a checkpoint: by this process, or (a recruited one) by
  // the survivor that got furthest.
  bool replaying() const { return iteration_ < replay_until_; }
  bool failing_in_step() const { return comms_.revoked() || comms_.revoked_unseen(); }
  void add_callback(std::function<void(const FailureEvent&)> cb) { comms_.add_callback(std::move(cb)); }
  std::vector<int> failed_logical_ranks() const { return members_.failed_logical_ranks(); }
  const std::vector<std::string>& args() const { return args_; }

  // RuntimeServices (TryBlocks and Reinit; config() etc. for Context too).
  const Config& config() const override { return config_; }
  std::int64_t iteration() const override { return iteration_; }
  int recoveries() const override { return recoveries_; }
  bool failing() const override { return comms_.revoked(); }
  void check_world_watch() override;
  void fault_point(Phase phase) override;
  void fault_point(Phase phase, std::int64_t iteration);
  void record_committed();  // an asynchronous commit that completed: into the report
  void app_restores() override { app_restores_ = true; }
  void drop_registrations() override { comms_.drop_registrations(); }
  void reached(std::int64_t iteration) override;
  void checkpoint(std::int64_t iteration) override;
  std::optional<std::int64_t> restore_checkpoint() override;

 private:
  void start_fault_point() const;  // Phase::start, before the tables
  int init_world();                // MPI_SUCCESS, or how a process failure in start-up showed here
  void log_start();
  void activate();    // Kokkos on this process's device, and the app: once
  void run_active();  // the step loop; throws ProcessFailure
  void prepare();     // what the Stage says, up to the steps
  // How resize() ended: the app restored a checkpoint, started afresh by
  // its own choice, or a lost checkpoint went to on_lost_checkpoint.
  enum class Resized { restored, fresh, lost };
  Resized resize();
  void forget_app_registrations();           // derived comms, failure callbacks, store members
  std::optional<std::int64_t> resize_app();  // the app's resize(), a lost checkpoint under the policy
  void resize_at_start(int old_size);
  void restore_or_initialize();
  std::optional<std::int64_t> restore_at_start();  // the newest version, where one may be
  void initialize_app();                           // a fresh start: the app's initialize(), at iteration 0
  // Static members `lost` by a restore (`why`): the app rebuilds them, or
  // the lost-checkpoint policy applies; false: it restarted the store.
  bool rebuild_statics(const std::vector<int>& lost, const std::string& why);
  bool rebuild_statics();                                // those the last restore() lost
  void steps(StepsTimer& timer);                         // checkpoints' seconds go to `timer`
  void choose_interval(double commit_s, double step_s);  // every: auto, after a commit
  void sync_interval();                                  // every: auto and replays, after a restore
  bool commit_due();                                     // the policy's, put off by can_checkpoint()
  [[noreturn]] void unchecked_failure();                 // the app's own MPI calls met a failure
  void after_restore(const RestoreInfo& info);           // the app's restored() hook
  void warn_static_unrebuilt();                          // once, after the first setup()
  void check_world(int rc, const char* call);            // a failed call on the world: repair
  bool idle_as_spare();                                  // true: released; false: woken by a failure
  void on_error(const std::exception& e);                // one no repair can fix
  void recover();                                        // repair + roles + bookkeeping
  RepairResult repair_world();
  void end_if_fatal(const RepairResult& res);
  void end_if_exhausted(const RepairResult& res);
  void take_roles(const RepairResult& res);
  int placed_buddy_distance() const;
  void apply_lost_policy(const std::string& what);
  void on_lost_checkpoint();  // restore found nothing: policy
  Phase restore_phase() const { return recoveries_ > 0 ? Phase::restore : Phase::start_restore; }
  void record_start(CheckpointLevel level, int old_size);  // the report's `start` (a cold start's)
  void restore_fault_point();  // restore_phase()'s, at the iteration the failure struck
  void finish_job();
  void end_job(const JobEnded& e);
  Placement placement() const;  // the report's: hosts of ranks, their copies, spares
  void conclude(ExitCode code, const std::string& text);

  Config config_;
  std::vector<std::string> args_;
  AppMaker make_;
  DeviceSession& session_;
  DeviceMap devices_;
  std::unique_ptr<ResilientApp> app_;  // made by activate(); outlives the store, which holds its members
  Context ctx_;
  std::unique_ptr<DataStore> store_;
  Report report_;
  Injector injector_;
  ProgressStamp progress_;  // for the supervisor's watchdog
  CommitPacing pacing_{CheckpointInterval{config_.checkpoint.memory.every,
                                          config_.checkpoint.memory.every_auto, config_.checkpoint.mtbf_s}};
  ControlWatch control_;

  Membership members_;
  CommRegistry comms_;
  RecoveryRecorder recorder_;
  HistoryHandover history_;

  Stage stage_ = Stage::setup;
  bool app_restores_ = false;   // Reinit: the resilient function restores
  bool app_rebuilds_static_;    // see the constructor
  bool warned_static_ = false;  // warn_static_unrebuilt() said it
  std::int64_t iteration_ = 0;
  std::int64_t reached_ = 0;       // the most steps this process has completed
  std::int64_t replay_until_ = 0;  // steps completed before the last restore (sync_interval)
  bool stepped_ = false;           // a step began since this process's setup(): RestoreInfo::fresh_process
  int recoveries_ = 0;
  Verdict verdict_;
};

}  // namespace fx::detail
