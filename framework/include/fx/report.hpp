#pragma once
/// \file
/// The run report: one YAML file per run, written by the live active rank
/// with the lowest logical rank (every process keeps the record), and a
/// human summary printed at the end. Keys are snake_case (docs/config.md).
#include <fx/config.hpp>
#include <fx/data_store/level.hpp>
#include <fx/enum_names.hpp>
#include <fx/exit_code.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace fx {
namespace detail {
struct ReportAccess;
}  // namespace detail

/// What a repair did: spares took the failed logical ranks (replace), the
/// ranks left were renumbered (shrink: spares ran out), only spares had died
/// (spare_lost), or no process had (rollback: a TryBlock's rollback). Every
/// one rolls the ranks back to the last checkpoint.
enum class RecoveryAction { replace, shrink, spare_lost, rollback };
/// A TryBlock's end as the report records it.
enum class TryBlockOutcome { committed, aborted };

/// One failed process (`failures[]` in the report).
struct FailureRecord {
  int world_rank = -1;    ///< the process that failed
  int logical_rank = -1;  ///< -1: a spare died
  /// Where it ran.
  std::string host;
  double time = 0;                ///< run-relative seconds of the kill (or detection when unknown)
  double detection_latency = -1;  ///< kill -> first error seen by a survivor; -1 unknown
  std::int64_t iteration = -1;    ///< the iteration the survivors were at
};

/// One repair (`recoveries[]` in the report); times in seconds.
struct RecoveryRecord {
  double start = 0;      ///< run-relative seconds when repair began
  double detect_s = -1;  ///< kill -> first detection
  double revoke_s = 0;   ///< revoking the communicators
  double shrink_s = 0;   ///< shrinking them to the live processes
  double agree_s = 0;    ///< allgather of identities + agreement
  double rebuild_s = 0;  ///< app comm split + derived comms
  double restore_s = 0;  ///< the checkpoint restore after it
  double total_s = 0;    ///< kill (or detection) -> resumed step; interrupted: -> the next detection
  int rounds = 1;        ///< repair rounds (a failure during a repair adds one)
  std::vector<int> failed_world_ranks;                     ///< the processes that failed, by world rank
  std::vector<int> failed_logical_ranks;                   ///< their logical ranks (-1: a spare)
  std::int64_t restored_iteration = -1;                    ///< the iteration restored (-1: none)
  CheckpointLevel restored_level = CheckpointLevel::none;  ///< where it came from
  RecoveryAction action = RecoveryAction::replace;         ///< what the repair did
  int new_size = 0;                                        ///< logical ranks after it
  /// Another failure came before its first step after the restore: the next
  /// repair took over (restored_level none when it came before the restore
  /// ended).
  bool interrupted = false;
  /// The repair completed and a policy then ended the job before its first
  /// step (recovery.on_lost_checkpoint or checkpoint.LEVEL.on_unusable
  /// 'stop'); restored_level says what the restore had read, if anything.
  bool stopped = false;
};

/// How the run started (`start` in the report): the version a cold restart
/// restored (level none and iteration 0: from scratch) and the versions it
/// passed over on the way.
struct StartRecord {
  CheckpointLevel level = CheckpointLevel::none;  ///< where the version came from
  std::int64_t iteration = 0;                     ///< the iteration it resumed at
  int old_size = 0;                     ///< the version was written by this many ranks (0: this job's)
  std::vector<SkippedVersion> skipped;  ///< tried and passed over, newest first
};

/// One checkpoint (`checkpoints[]` in the report).
struct CheckpointRecord {
  std::int64_t iteration = 0;  ///< the version's iteration
  double time = 0;             ///< run-relative seconds when the commit began
  /// The deepest level written.
  CheckpointLevel level = CheckpointLevel::memory;
  std::uint64_t bytes = 0;  ///< per rank
  double seconds = 0;       ///< the commit call
  double bandwidth = 0;     ///< bytes / seconds (asynchronous: bytes / committed_s)
  /// checkpoint.memory.every: auto: the interval chosen after this commit
  /// (iterations; 0: a fixed interval) and its expected waste (a fraction).
  ///@{
  int next_interval = 0;
  double expected_waste = 0;
  ///@}
  /// checkpoint.memory.async: the time until the version was committed (0: a
  /// synchronous commit) and the app's time on it after the commit returned.
  ///@{
  double committed_s = 0;
  double background_s = 0;
  ///@}
};

/// One TryBlock (`tryblocks[]` in the report).
struct TryBlockRecord {
  std::string name;  ///< the block's name
  /// How it ended.
  TryBlockOutcome outcome = TryBlockOutcome::committed;
  int attempts = 1;             ///< times the body ran
  std::string errors;           ///< "rank 2: incorrect_result; ..."
  std::int64_t iteration = -1;  ///< the runtime's iteration the block ran in (-1: unknown)
};

/// Where a logical rank ran, and where its in-memory buddy copy was held.
struct RankPlacement {
  int logical = -1;       ///< the logical rank
  int world_rank = -1;    ///< the process holding it
  std::string host;       ///< that process's host
  int copy_holder = -1;   ///< logical rank holding its buddy copy (-1: parity scheme, or none yet)
  std::string copy_host;  ///< that rank's host
  /// The device it runs on: an index into its visible devices (docs/gpu.md,
  /// "Devices and spares"); -1: none visible, or chosen by the user's Kokkos options.
  int device = -1;
};

/// The layout the run ended with: every logical rank, the spares left, and
/// the buddy distance the store chose (0: parity scheme, or no commit yet).
struct Placement {
  std::vector<RankPlacement> ranks;                 ///< by logical rank
  std::vector<std::pair<int, std::string>> spares;  ///< world rank, host
  int buddy_distance = 0;                           ///< 0: parity scheme, or no commit yet
};

/// An injection spec that never fired anywhere in a finished run: `spec` in
/// FX_INJECT's short form, its key (inject.failures[1], inject.chaos[0],
/// with `#k` for a repeat's copy) and where it was declared.
struct UnfiredInjection {
  std::string spec;    ///< in FX_INJECT's short form
  std::string key;     ///< e.g. inject.failures[1]
  std::string origin;  ///< where it was declared (file:line:column, env FX_INJECT)
};

/// Where the run happened. set_config fills it in (hostname, MPI library,
/// Kokkos version, UTC date); tests pin it with set_platform.
struct Platform {
  std::string hostname;        ///< this host's name
  std::string mpi_version;     ///< the MPI library's version string
  std::string kokkos_version;  ///< the Kokkos version
  std::string date;            ///< ISO 8601, UTC
};

/// The run report this process keeps (see the file's description). The
/// runtime records into it; an application sees it through ReportView
/// (ctx.report()).
class Report {
 public:
  /// The job's settings and shape (echoed in the report); fills in the platform unless set.
  /// \param config the job's configuration (echoed; its report path kept)
  /// \param active the number of logical ranks at the start
  /// \param spares the number of spare processes at the start
  /// \param world_size MPI_COMM_WORLD's size
  void set_config(const Config& config, int active, int spares, int world_size);
  /// Pin the platform (tests).
  /// \param platform replaces what set_config detects
  void set_platform(Platform platform) { platform_ = std::move(platform); }
  /// Where the run happened.
  /// \return the platform set or detected (empty fields before set_config)
  const Platform& platform() const { return platform_; }
  /// The application's name.
  /// \param name as the summary's first line and the report's `app` show it
  void set_app(std::string name) { app_ = std::move(name); }
  /// The time of one phase: setup, initialize, steps, finish, ...
  /// \param phase the phase's name, a key under `phases:`
  /// \param seconds its time, replacing any earlier one
  void set_phase_time(const std::string& phase, double seconds);
  /// Accumulate: phases such as setup run again after each recovery.
  /// \param phase the phase's name, a key under `phases:`
  /// \param seconds added to its time
  void add_phase_time(const std::string& phase, double seconds) { phases_[phase] += seconds; }
  /// Record a failure.
  /// \param r the failed process, appended to failures()
  void add_failure(FailureRecord r) { failures_.push_back(std::move(r)); }
  /// Record a repair.
  /// \param r the repair, appended to recoveries()
  void add_recovery(RecoveryRecord r) { recoveries_.push_back(std::move(r)); }
  /// How the run started.
  /// \param r replaces the start recorded so far
  void set_start(StartRecord r) { start_ = std::move(r); }
  /// How the run started (see set_start).
  /// \return the start recorded (from scratch until set_start)
  const StartRecord& start() const { return start_; }
  /// Record a checkpoint.
  /// \param r the checkpoint, appended to checkpoints()
  void add_checkpoint(CheckpointRecord r) { checkpoints_.push_back(std::move(r)); }
  /// An asynchronous commit of `iteration` became committed.
  /// \param iteration the version's iteration (the latest record of it is completed; none:
  ///   nothing happens)
  /// \param committed_s seconds from the commit call until it was committed
  /// \param background_s the app's seconds on it after the call
  void set_checkpoint_committed(std::int64_t iteration, double committed_s, double background_s);
  /// The automatic interval chosen after the last checkpoint (none yet: ignored).
  /// \param next_interval the interval chosen after it, in iterations (0: a fixed interval)
  /// \param expected_waste its expected waste, a fraction of the run time (0..1)
  void set_checkpoint_interval(int next_interval, double expected_waste);
  /// Record a TryBlock.
  /// \param r the block, appended to tryblocks()
  void add_tryblock(TryBlockRecord r) { tryblocks_.push_back(std::move(r)); }
  /// A layout with a rank nobody holds (the run ended inside a repair) is
  /// none the run had: the last complete one stays, marked as earlier.
  /// \param p the layout now, by logical rank
  void set_placement(Placement p);
  /// The last complete layout.
  /// \return it (empty before the first set_placement with a complete one)
  const Placement& placement() const { return placement_; }
  /// A checkpoint was lost and recovery.on_lost_checkpoint: restart began
  /// the run again from iteration 0.
  void add_restart_from_scratch() { ++restarts_from_scratch_; }
  /// Times the run began again from iteration 0 (add_restart_from_scratch).
  /// \return the number of add_restart_from_scratch() calls
  int restarts_from_scratch() const { return restarts_from_scratch_; }
  /// Progress samples (run-relative time, iteration) for the timeline plot.
  /// \param time run-relative seconds
  /// \param iteration the iteration reached then
  void add_progress(double time, std::int64_t iteration) { progress_.emplace_back(time, iteration); }
  /// Application results, printed verbatim (numbers keep full precision):
  /// strings, bool (true/false) and every integer and floating-point type.
  /// \param key the result's name under `results:`; a later value replaces an earlier one
  /// \param value the result
  ///@{
  void set_result(const std::string& key, std::string value) { results_[key] = std::move(value); }
  void set_result(const std::string& key, const char* value) { results_[key] = value; }
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  void set_result(const std::string& key, T value) {
    if constexpr (std::is_same_v<T, bool>) {
      results_[key] = value ? "true" : "false";
    } else if constexpr (std::is_integral_v<T>) {
      results_[key] = std::to_string(value);
    } else {
      set_real_result(key, static_cast<double>(value));
    }
  }
  ///@}
  /// The injection specs that never fired (replaces the list).
  /// \param specs the specs, in declaration order
  void set_unfired(std::vector<UnfiredInjection> specs) { unfired_ = std::move(specs); }
  /// The injection specs that never fired (see set_unfired).
  /// \return the list set last (empty until then)
  const std::vector<UnfiredInjection>& unfired() const { return unfired_; }
  /// write() failed: the summary says so instead of naming the file.
  void set_unwritten() { unwritten_ = true; }

  /// Write the YAML report (throws fx::Error naming the path on failure).
  /// \param path the file; written beside and renamed over it, missing directories created
  /// \throws Error naming the path when it cannot be written (a directory, a device, no
  ///   permission; an existing file there is left as it was)
  void write(const std::string& path) const;
  /// The few lines printed at the end of a run.
  /// \return the summary, each line ending in a newline
  std::string summary() const;
  /// The report as YAML text (what write() puts in the file).
  /// \return one YAML document
  /// \throws Error when the YAML emitter fails
  std::string to_yaml() const;
  /// The run's history (phases, failures, recoveries, checkpoints, TryBlocks,
  /// progress) as another process recorded it, in to_yaml() form: a spare
  /// recruited late takes it over, so whoever writes the report has it all.
  /// \return to_yaml()
  /// \throws Error when the YAML emitter fails
  std::string history_yaml() const { return to_yaml(); }

  /// The failures recorded, in recording order.
  /// \return the list, valid until the next add_failure()
  const std::vector<FailureRecord>& failures() const { return failures_; }
  /// The repairs recorded, in recording order.
  /// \return the list, valid until the next add_recovery()
  const std::vector<RecoveryRecord>& recoveries() const { return recoveries_; }
  /// The checkpoints recorded, in recording order.
  /// \return the list, valid until the next add_checkpoint()
  const std::vector<CheckpointRecord>& checkpoints() const { return checkpoints_; }
  /// The TryBlocks recorded, in recording order.
  /// \return the list, valid until the next add_tryblock()
  const std::vector<TryBlockRecord>& tryblocks() const { return tryblocks_; }
  /// The job's verdict.
  /// \return the exit code the launcher reports (ok until the runtime sets it)
  ExitCode exit_code() const { return exit_; }
  /// The verdict's reason.
  /// \return one line; may be empty
  const std::string& exit_text() const { return exit_text_; }

 private:
  // The runtime's alone, through detail::ReportAccess: the verdict, and a
  // recruited spare's takeover of another process's history.
  friend struct detail::ReportAccess;
  void set_exit(ExitCode code, std::string text);
  void adopt_history(const std::string& yaml);  // another process's history_yaml()

  std::string app_;
  Platform platform_;
  std::string report_path_;
  std::string config_echo_;
  int active_ = 0, spares_ = 0, world_size_ = 0;
  std::map<std::string, double> phases_;
  std::vector<FailureRecord> failures_;
  std::vector<RecoveryRecord> recoveries_;
  StartRecord start_;
  std::vector<CheckpointRecord> checkpoints_;
  std::vector<TryBlockRecord> tryblocks_;
  std::vector<UnfiredInjection> unfired_;
  Placement placement_;
  bool placement_earlier_ = false;  ///< the run ended with an incomplete layout
  std::vector<std::pair<double, std::int64_t>> progress_;
  std::map<std::string, std::string> results_;
  ExitCode exit_ = ExitCode::ok;
  std::string exit_text_;
  bool unwritten_ = false;
  int restarts_from_scratch_ = 0;

  void set_real_result(const std::string& key, double value);  ///< shortest exact text
};

/// What an application sees of the run report (ctx.report()): it adds its
/// results and phase times and reads what the run recorded; failures,
/// recoveries, checkpoints and the verdict are the runtime's to record.
class ReportView {
 public:
  /// A view of `report` (kept by reference: the runtime's, for the whole run).
  /// \param report the report viewed; it must outlive the view
  explicit ReportView(Report& report) : report_(report) {}
  /// An application result, printed verbatim under `results:` (strings,
  /// bool and every arithmetic type; numbers keep full precision).
  /// \param key the result's name; a later value replaces an earlier one
  /// \param value a string, bool or number
  template <class T>
  void set_result(const std::string& key, T&& value) {
    report_.set_result(key, std::forward<T>(value));
  }
  /// The time of one of the application's phases (e.g. `assemble`).
  /// \param phase the phase's name, a key under `phases:` (fx's own: setup, steps, ...)
  /// \param seconds its time, replacing any earlier one
  void set_phase_time(const std::string& phase, double seconds) { report_.set_phase_time(phase, seconds); }
  /// The failures recorded so far.
  /// \return the list, in order; valid until the runtime records another
  const std::vector<FailureRecord>& failures() const { return report_.failures(); }
  /// The repairs recorded so far.
  /// \return the list, in order; valid until the runtime records another
  const std::vector<RecoveryRecord>& recoveries() const { return report_.recoveries(); }
  /// The checkpoints recorded so far.
  /// \return the list, in order; valid until the runtime records another
  const std::vector<CheckpointRecord>& checkpoints() const { return report_.checkpoints(); }
  /// The TryBlocks recorded so far.
  /// \return the list, in order; valid until the runtime records another
  const std::vector<TryBlockRecord>& tryblocks() const { return report_.tryblocks(); }

 private:
  Report& report_;
};

}  // namespace fx

FX_ENUM_NAMES(fx::RecoveryAction, {fx::RecoveryAction::replace, "replace"},
              {fx::RecoveryAction::shrink, "shrink"}, {fx::RecoveryAction::spare_lost, "spare-lost"},
              {fx::RecoveryAction::rollback, "rollback"})
FX_ENUM_NAMES(fx::TryBlockOutcome, {fx::TryBlockOutcome::committed, "committed"},
              {fx::TryBlockOutcome::aborted, "aborted"})
