#pragma once
/// \file
/// fx::Context: what an application sees of fx.
#include <fx/comm.hpp>
#include <fx/config.hpp>
#include <fx/data_store/store.hpp>
#include <fx/report.hpp>
#include <fx/tryblock.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fx {

/// How this process came to run the app: active from the start (initial),
/// active through a repair (survivor), a spare that took a failed rank's
/// place (recovered), a spare still waiting (spare), or restarted: an
/// active process of a job the supervisor relaunched after hosts were lost
/// (it resumes from the newest complete checkpoint).
enum class Role { initial, survivor, recovered, spare, restarted };

/// What a failure callback is told, once per repair, on every live process.
struct FailureEvent {
  std::vector<int> failed_world_ranks;    ///< the processes that failed, by world rank
  std::vector<int> failed_logical_ranks;  ///< -1 entries: spares that died
  int new_size = 0;                       ///< logical size after repair
  bool shrunk = false;                    ///< spares ran out: fewer ranks now
  int recovery_index = 0;                 ///< 1 for the first repair, ...
};

namespace detail {
class Runtime;
struct ContextAccess;
struct TryState;
}  // namespace detail

/// What an application sees of fx. Handed to every ResilientApp hook.
class Context {
 public:
  /// The logical communicator: size() ranks numbered 0..size()-1, the same
  /// numbering after every repair.
  /// \return the runtime's handle, which follows the rebuilt communicator after a repair
  const Comm& comm() const;
  /// This process's logical rank in comm().
  /// \return 0..size()-1
  int rank() const;
  /// The number of logical ranks.
  /// \return comm()'s size (smaller after a shrink)
  int size() const;
  /// How this process came to run the app.
  /// \return its role now (a recruited spare: recovered)
  Role role() const;
  /// The iteration the app is at.
  /// \return the step running now (the `iteration` step() is given)
  std::int64_t iteration() const;
  /// Whether the step now running was completed before: a failure took the
  /// job back to a checkpoint, and the steps since it run again. Per
  /// process: a step this process completed (a recruited spare: a step the
  /// survivor that got furthest completed). Print a step's output at its
  /// end only when this is false (and ctx.failing() is too), and each line
  /// appears once. False at a start from storage: what a job before the
  /// relaunch printed is not known.
  /// \return true while the step running now is a replayed one
  bool replaying() const;
  /// Whether this step has met a process failure: a communicator of the
  /// app's was revoked (by fx, or by fx's error handler after a raw MPI
  /// call failed) and this process knows a process of it failed. fx then
  /// abandons the step at its end and runs it again from the restored
  /// checkpoint, so what it computed is not to be printed. Code that checks
  /// its MPI calls never gets this far (the failed call throws). A revoke
  /// with nobody dead (a TryBlock's deadline) is not a failure.
  /// \return true once this step has met a process failure
  bool failing() const;
  /// Repairs this process has been through.
  /// \return 0 before the first
  int recoveries() const;

  /// The data store: what checkpoints hold.
  /// \return the runtime's store, valid for the whole run
  DataStore& store();
  /// The run report: results in, records out (set_result).
  /// \return a view of the runtime's report
  ReportView report();
  /// The whole of fx's configuration.
  /// \return the configuration the job was started with, valid for the whole run
  const Config& fx_config() const;
  /// The application's own section (`app:`): ctx.config().get("nx", 64).
  /// \return fx_config().app
  const ConfigSection& config() const;

  /// The command line left after fx and Kokkos took their options
  /// (args()[0] is the program).
  /// \return the arguments, valid for the whole run
  const std::vector<std::string>& args() const;

  /// A named fault-injection point inside the app (such as Phase::halo), so
  /// failures can be injected exactly there.
  /// \param phase the point's name, as injection specs name it (`phase: halo`)
  /// \throws ConfigError when a bitflip injected here names a member not registered or a bit
  ///   outside it
  void fault_point(Phase phase);

  /// Communicators derived from comm(): revoked with it on a failure and
  /// rebuilt (the same split replayed) after each repair. Create them in
  /// setup(), before any other collective: a recruited spare runs setup()
  /// while the survivors replay their splits, in the same order.
  ///@{
  /// MPI_Comm_split of comm(); collective over comm().
  /// \param color ranks of equal color share a communicator (>= 0)
  /// \param key orders the ranks in it (ties: by rank in comm())
  /// \return the derived communicator
  /// \throws ProcessFailure when a process of comm() failed
  /// \throws MpiError when MPI fails for another reason
  Comm split(int color, int key);
  /// MPI_Comm_dup of comm(); collective over comm().
  /// \return the derived communicator
  /// \throws ProcessFailure when a process of comm() failed
  /// \throws MpiError when MPI fails for another reason
  Comm dup();
  ///@}

  /// Runs on every live process once per repair, after the repair, on every role.
  /// \param callback called with what the repair did; kept until the run ends (a shrink and
  ///   each Reinit entry drop the callbacks registered before)
  void on_failure(std::function<void(const FailureEvent&)> callback);
  /// Logical ranks (at the time they failed) this process knows to have failed.
  /// \return the ranks, in the order their failures became known (a spare that died: none)
  std::vector<int> failed_ranks() const;

  /// A TryBlock over comm() or a subgroup of it (see <fx/tryblock.hpp>).
  /// Inside another block's body it is nested in that block.
  ///@{
  /// A TryBlock over comm().
  /// \param name the block's name, in its outcome, the report and errors
  /// \param body run once per attempt, on every rank of comm()
  /// \param options the block's own policy; unset fields: the `tryblock:` settings
  /// \return the outcome, the same on every rank of comm()
  /// \throws TryBlockAborted for a top-level block still aborted after its retries, with
  ///   rollback off or already tried for this block and iteration
  /// \throws ProcessFailure when a process failed, or to roll back to the last checkpoint: the
  ///   runtime's repair takes over (let it propagate)
  /// \throws UsageError for invalid options, a `save` naming no registered member, a group
  ///   not valid here, or ranks that did not all enter the same blocks in the same order
  /// \throws ConfigError when the body threw one: rethrown on its rank, never retried, as a
  ///   UsageError or a non-fx exception from the body is (the other ranks throw ProcessFailure)
  /// \throws MpiError when an agreement fails for a reason other than a process failure
  TryOutcome try_block(const std::string& name, const TryBody& body, const TryOptions& options = {});
  /// A TryBlock over `group`, a subgroup of comm() (from split() or dup()).
  /// \param name the block's name, in its outcome, the report and errors
  /// \param group the ranks that run the block; every one of them must call this
  /// \param body run once per attempt, on every rank of `group`
  /// \param options the block's own policy; unset fields: the `tryblock:` settings
  /// \return the outcome, the same on every rank of `group`
  /// \throws TryBlockAborted for a top-level block still aborted after its retries, with
  ///   rollback off or already tried for this block and iteration
  /// \throws ProcessFailure when a process failed, or to roll back to the last checkpoint: the
  ///   runtime's repair takes over (let it propagate)
  /// \throws UsageError for invalid options, a `save` naming no registered member, a group
  ///   not valid here, or ranks that did not all enter the same blocks in the same order
  /// \throws ConfigError when the body threw one: rethrown on its rank, never retried, as a
  ///   UsageError or a non-fx exception from the body is (the other ranks throw ProcessFailure)
  /// \throws MpiError when an agreement fails for a reason other than a process failure
  TryOutcome try_block(const std::string& name, const Comm& group, const TryBody& body,
                       const TryOptions& options = {});
  ///@}

 private:
  friend struct detail::ContextAccess;  ///< TryBlocks and Reinit reach the runtime
  friend class detail::Runtime;         ///< makes it and hands it to the app's hooks
  explicit Context(detail::Runtime& rt) : rt_(rt) {}
  detail::Runtime& rt_;
  std::shared_ptr<detail::TryState> try_state_;
};

}  // namespace fx

FX_ENUM_NAMES(fx::Role, {fx::Role::initial, "initial"}, {fx::Role::survivor, "survivor"},
              {fx::Role::recovered, "recovered"}, {fx::Role::spare, "spare"},
              {fx::Role::restarted, "restarted"})
