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
  /// Made by the runtime, which hands it to the app's hooks.
  explicit Context(detail::Runtime& rt) : rt_(rt) {}

  /// The logical communicator: size() ranks numbered 0..size()-1, the same
  /// numbering after every repair.
  const Comm& comm() const;
  int rank() const;                ///< this process's logical rank in comm()
  int size() const;                ///< the number of logical ranks
  Role role() const;               ///< how this process came to run the app
  std::int64_t iteration() const;  ///< the iteration the app is at
  /// Whether the step now running was completed before: a failure took the
  /// job back to a checkpoint, and the steps since it run again. Per
  /// process: a step this process completed (a recruited spare: a step the
  /// survivor that got furthest completed). Print a step's output at its
  /// end only when this is false (and ctx.failing() is too), and each line
  /// appears once. False at a start from storage: what a job before the
  /// relaunch printed is not known.
  bool replaying() const;
  /// Whether this step has met a process failure: a communicator of the
  /// app's was revoked (by fx, or by fx's error handler after a raw MPI
  /// call failed) and this process knows a process of it failed. fx then
  /// abandons the step at its end and runs it again from the restored
  /// checkpoint, so what it computed is not to be printed. Code that checks
  /// its MPI calls never gets this far (the failed call throws). A revoke
  /// with nobody dead (a TryBlock's deadline) is not a failure.
  bool failing() const;
  int recoveries() const;  ///< repairs this process has been through

  DataStore& store();               ///< the data store: what checkpoints hold
  ReportView report();              ///< the run report: results in, records out (set_result)
  const Config& fx_config() const;  ///< fx's whole configuration
  /// The application's own section (`app:`): ctx.config().get("nx", 64).
  const ConfigSection& config() const;

  /// The command line left after fx and Kokkos took their options
  /// (args()[0] is the program).
  const std::vector<std::string>& args() const;

  /// A named fault-injection point inside the app (such as Phase::halo), so
  /// failures can be injected exactly there.
  void fault_point(Phase phase);

  /// Communicators derived from comm(): revoked with it on a failure and
  /// rebuilt (the same split replayed) after each repair. Create them in
  /// setup(), before any other collective: a recruited spare runs setup()
  /// while the survivors replay their splits, in the same order.
  ///@{
  Comm split(int color, int key);
  Comm dup();
  ///@}

  /// Runs on every live process once per repair, after the repair, on every role.
  void on_failure(std::function<void(const FailureEvent&)> callback);
  /// Logical ranks (at the time they failed) this process knows to have failed.
  std::vector<int> failed_ranks() const;

  /// A TryBlock over comm() or a subgroup of it (see <fx/tryblock.hpp>).
  /// Inside another block's body it is nested in that block.
  ///@{
  TryOutcome try_block(const std::string& name, const TryBody& body, const TryOptions& options = {});
  TryOutcome try_block(const std::string& name, const Comm& group, const TryBody& body,
                       const TryOptions& options = {});
  ///@}

 private:
  friend struct detail::ContextAccess;  ///< TryBlocks and Reinit reach the runtime
  detail::Runtime& rt_;
  std::shared_ptr<detail::TryState> try_state_;
};

}  // namespace fx

FX_ENUM_NAMES(fx::Role, {fx::Role::initial, "initial"}, {fx::Role::survivor, "survivor"},
              {fx::Role::recovered, "recovered"}, {fx::Role::spare, "spare"},
              {fx::Role::restarted, "restarted"})
