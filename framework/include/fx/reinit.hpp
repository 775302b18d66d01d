#pragma once
/// \file
/// Reinit mode (global restart, after the MPI_Reinit proposal):
/// \code
///   void solve(fx::Context& ctx, fx::ReinitState state) {
///     std::vector<double> u(n);
///     ctx.store().add("u", u);                      // every entry: register
///     std::int64_t it = 0;
///     if (state != fx::ReinitState::fresh) it = fx::restore_checkpoint(ctx).value_or(0);
///     for (; it < iters; ++it) {
///       fx::iteration_point(ctx, it);
///       ... step ...
///       if (it % 10 == 9) fx::checkpoint(ctx, it + 1);
///       fx::test_failure(ctx);                      // sync mode: rollback point
///     }
///   }
///   int main(int argc, char** argv) { return fx::reinit(argc, argv, solve); }
/// \endcode
/// fx owns MPI and Kokkos around the call. After a process failure every live
/// process (survivors and the recruited spare) unwinds out of the function
/// (RAII runs; no longjmp), the runtime repairs the communicators, and the
/// function is entered again: `reinited` on survivors, `restarted` on the
/// replacement. Registrations (data-store members, ctx.split/dup
/// communicators, on_failure callbacks) end with each entry.
///
/// Handler modes (reinit.mode, or fx::set_reinit_mode before fx::reinit):
/// - async: a failure sends every process back at its next fx call (a
///   communication, iteration_point, checkpoint, test_failure ...);
/// - sync: fx calls that meet the failure throw fx::ProcessFailure, which
///   the function may catch and carry on; the rollback happens at the
///   next fx::test_failure().
///
/// Rules (fx::UsageError): one active rollback region per process; the mode
/// is chosen before entering and never changed; a failure outside the region
/// (after the function returned) ends the job like errors-are-fatal; MPI and
/// Kokkos are finalized by fx, only after the function returned.
#include <fx/context.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

namespace fx {

/// How the resilient function was entered: the first time (fresh, named
/// "new"), again after a repair (reinited), or the first time on a spare
/// that replaced a failed rank or in a relaunched job (restarted).
/// fx::ReinitMode (async, sync) is declared with the configuration.
enum class ReinitState { fresh, reinited, restarted };

/// The function fx::reinit runs as the rollback region.
using ResilientFunction = std::function<void(Context&, ReinitState)>;

/// Run `fn` as the job's rollback region; returns the process exit code
/// (as fx::run does). Called once per process, from main().
/// \param argc main()'s argument count
/// \param argv main()'s arguments; fx and Kokkos take their options out
/// \param fn the rollback region, entered once per start and once more after each repair
/// \return the process exit code (an fx::ExitCode's value), for main() to return
/// \throws UsageError when called inside the resilient function, a second time, after MPI
///   was initialized, or with an empty `fn`
int reinit(int argc, char** argv, const ResilientFunction& fn);

/// Choose the handler mode before fx::reinit (overrides reinit.mode unless
/// the YAML sets a different one: that is a UsageError). Inside the region:
/// a UsageError unless `mode` is the mode already in force.
/// \param mode async or sync (see the file's description)
/// \throws UsageError inside the region, for a mode other than the one in force
void set_reinit_mode(ReinitMode mode);
/// The mode in force inside the region; outside it, the one set_reinit_mode
/// chose (async when none).
/// \return async or sync
ReinitMode reinit_mode();

/// Inside the resilient function only (UsageError elsewhere):
/// a rollback point: if a failure is known, go back to the start of fn.
/// \param ctx the context the resilient function was given
/// \throws ProcessFailure when a failure is known: the rollback itself (let it propagate)
/// \throws UsageError outside the resilient function
void test_failure(Context& ctx);
/// The function's loop is at `iteration`: for fault injection, the report and
/// logs; in async mode also a point where a known failure sends it back.
/// Also moves an asynchronous commit in flight on (DataStore::progress).
/// \param ctx the context the resilient function was given
/// \param iteration the iteration about to run
/// \throws ProcessFailure in async mode when a failure is known (the rollback: let it
///   propagate), and in either mode when the commit in flight meets one
/// \throws CheckpointError when the commit in flight failed on some rank
/// \throws ConfigError when a bitflip injected here names a member not registered
/// \throws MpiError when an MPI call fails for another reason
/// \throws UsageError outside the resilient function
void iteration_point(Context& ctx, std::int64_t iteration);
/// Commit the registered members as the version of `iteration`.
/// \param ctx the context the resilient function was given
/// \param iteration the version's iteration, the one restore_checkpoint() returns: the next
///   to run
/// \throws ProcessFailure when a process fails during the commit
/// \throws CheckpointError when some rank could not save a member or write its files; the
///   previous version stays the committed one
/// \throws MpiError when an MPI call fails for another reason
/// \throws UsageError outside the resilient function
void checkpoint(Context& ctx, std::int64_t iteration);
/// Load the newest checkpoint every rank can get; nullopt when there is none.
/// \param ctx the context the resilient function was given
/// \return the restored version's iteration: the next to run; std::nullopt when there is none
///   (or static members could not be rebuilt and recovery.on_lost_checkpoint is `restart`)
/// \throws ProcessFailure when a process fails during the restore
/// \throws CheckpointLost when no usable version is left and the policy says stop
///   (recovery.on_lost_checkpoint or checkpoint.LEVEL.on_unusable)
/// \throws MpiError when an MPI call fails for another reason
/// \throws UsageError outside the resilient function
std::optional<std::int64_t> restore_checkpoint(Context& ctx);

}  // namespace fx

FX_ENUM_NAMES(fx::ReinitState, {fx::ReinitState::fresh, "new"}, {fx::ReinitState::reinited, "reinited"},
              {fx::ReinitState::restarted, "restarted"})
