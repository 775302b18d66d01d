#pragma once
// The runtime behind fx::run: owns the world, the app communicator and its
// derived communicators, the spare pool, the data store, fault injection and
// the report; runs the step loop and repairs after failures.
#include <fx/app.hpp>
#include <fx/inject.hpp>
#include <fx/recovery/repair.hpp>
#include <fx/spares/spare_pool.hpp>

#include <fx/detail/status.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

class Runtime final : public FailureHandler {
 public:
  Runtime(Config config, std::vector<std::string> args, ResilientApp& app);
  ~Runtime() override;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Run to completion. The caller then runs shutdown_agree() over world()
  // with failures_seen(), hands the processes that died meanwhile (ranks of
  // world()) to conclude_job(), which settles the one verdict (report,
  // summary, $FX_STATUS_FILE) and returns the exit code, and leaves.
  void execute();
  bool failures_seen() const { return recoveries_ > 0 || !failed_.empty(); }
  MPI_Comm world() const { return world_; }
  int conclude_job(bool clean, const std::vector<int>& died_in_shutdown);
  MPI_Comm release_world();

  void on_failure(MPI_Comm where, int rc, const char* call) override;
  bool interrupted() override;

  // What Context forwards to.
  const Comm& app_comm() const { return comm_; }
  int logical_rank() const { return logical_; }
  int logical_size() const { return active_size_; }
  Role role() const { return role_; }
  std::int64_t iteration() const { return iteration_; }
  int recoveries() const { return recoveries_; }
  DataStore& store() { return *store_; }
  Report& report() { return report_; }
  const Config& config() const { return config_; }
  Comm derive(int color, int key, bool dup);
  void add_callback(std::function<void(const FailureEvent&)> cb) { callbacks_.push_back(std::move(cb)); }
  std::vector<int> failed_logical_ranks() const;
  const std::vector<std::string>& args() const { return args_; }
  void fault_point(Phase phase);

  // For TryBlocks and Reinit (tryblock.cpp, reinit.cpp).
  bool failing() const { return failing_; }   // revoked, repair pending
  void check_world_watch();                   // throws ProcessFailure once a failure was announced
  void checkpoint();                          // store commit of iteration(), with its report entry
  void set_iteration(std::int64_t it) { iteration_ = it; }
  void set_app_restores(bool on) { app_restores_ = on; }  // Reinit: the resilient function restores
  void drop_registrations();                  // derived comms and failure callbacks
  void note_resumed();                        // the first step after a repair is done
  void on_lost_checkpoint();                  // restore found nothing: policy
  RecoveryRecord* pending_recovery() { return pending_recovery_ ? &*pending_recovery_ : nullptr; }

 private:
  struct Derived {
    std::shared_ptr<CommSlot> slot;
    int color = 0, key = 0;
    bool dup = false;
  };

  bool init_world();  // false: a process failed during start-up
  void run_active();           // the step loop; throws ProcessFailure
  bool idle_as_spare();        // true: released; false: woken by a failure
  bool active_rank_alive();    // acknowledges the world's failures
  void recover();              // repair + roles + bookkeeping
  void rebuild_derived();
  void revoke_all();
  void publish_identity();
  void finish_job();
  void end_job(const JobEnded& e);
  void conclude(ExitCode code, const std::string& text);
  void record_failures(const std::vector<Identity>& failed);
  void plan_history_handover(const std::vector<Identity>& before, const std::vector<Identity>& after);
  void hand_over_history();   // a survivor's run record to recruited spares
  bool speaks_for_job() const;
  double since_start() const;
  void add_phase(const std::string& name, double seconds);

  Config config_;
  std::vector<std::string> args_;
  ResilientApp& app_;
  Context ctx_;
  std::unique_ptr<DataStore> store_;
  Report report_;
  Injector injector_;
  Watch watch_;

  MPI_Comm world_ = MPI_COMM_NULL;
  Comm comm_;                                 // the app comm; its slot follows repairs
  std::vector<Derived> derived_;
  std::vector<Identity> members_;             // identity of each world_ rank
  std::vector<std::string> hosts_;            // by MPI_COMM_WORLD rank
  std::vector<Identity> failed_;              // every process lost so far
  std::vector<std::function<void(const FailureEvent&)>> callbacks_;

  int world_rank_ = -1;                       // in MPI_COMM_WORLD
  int world_size_ = 0;
  int logical_ = -1;
  int active_size_ = 0;
  Role role_ = Role::initial;
  std::int64_t iteration_ = 0;
  int recoveries_ = 0;
  bool needs_setup_ = true;
  bool needs_rebuild_ = false;                // replay derived comms
  std::optional<RecoveryRecord> pending_recovery_;  // completed at the first step after repair
  double t_kill_ = -1;                        // newest victim's kill stamp
  bool needs_restore_ = true;                 // at start: cold restart attempt
  bool resized_ = false;
  bool app_restores_ = false;                 // skip the restore before the first step
  bool failing_ = false;                      // revoked, repair pending
  std::string fatal_;                         // this process's unrecoverable error
  ExitCode fatal_code_ = ExitCode::error;
  double t_detect_ = 0;
  double t_start_ = 0;
  std::string failing_call_;
  // The run record travels to recruited spares (any active rank may write
  // the report at the end): from this world rank (-1: none) to those.
  int history_donor_ = -1;
  std::vector<int> history_recipients_;
  bool history_pending_ = false;              // this process has not done its part yet
  // The verdict execute() reached; conclude_job() makes it final.
  struct Verdict {
    ExitCode code = ExitCode::ok;
    std::string text;
    int speaker = -1;  // 1/0: this process writes it or not; -1: the lowest live active rank
  } verdict_;
};

}  // namespace fx::detail
