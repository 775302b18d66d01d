#pragma once
/// \file
/// TryBlocks (after FA-MPI): a transaction over a group of ranks.
/// \code
///   fx::TryOutcome o = ctx.try_block("solve", [&](fx::TryScope& t) {
///     t.irecv(halo_in, n, left, 0);
///     t.isend(halo_out, n, right, 0);
///     t.wait();                                   // local completion, bounded
///     compute();
///     if (!abft_check()) t.raise_error(fx::TryError::incorrect_result);
///   });
/// \endcode
/// Every rank of the group enters the block (admission), runs the body, and
/// the commit decides ONE outcome for the whole group: committed, or aborted
/// with the group error state (which rank asserted which error). An aborted
/// block is handled by policy (YAML `tryblock:`): soft retries re-run the body
/// from the data saved at admission; then a rollback to the last checkpoint;
/// process failures go to recovery with spares; else fx::TryBlockAborted.
/// Semantics, costs and limits: docs/tryblock.md.
#include <fx/comm.hpp>
#include <fx/enum_names.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fx {

class Context;
class TryScope;

/// What a rank can assert. Values are bits: a rank's errors form a mask.
enum class TryError : unsigned {
  incorrect_result = 1,  ///< an algorithm-based check found a wrong result
  user_assertion = 2,    ///< the application's own reason
  timeout = 4,           ///< a wait, the admission or the commit ran out of time
  process_failure = 8,   ///< this rank failed (listed by the survivors)
  unknown = 16,          ///< the body threw, or MPI failed in another way
};

/// One entry of a block's group error state: a rank and an error it asserted.
struct TryRankError {
  int rank = -1;                       ///< in the block's communicator
  TryError error = TryError::unknown;  ///< one error (a single bit)
  /// Same rank and error.
  /// \param o the entry compared
  /// \return true when both fields are equal
  bool operator==(const TryRankError& o) const { return rank == o.rank && error == o.error; }
};

/// What became of a block, the same on every participant.
enum class TryAction {
  committed,  ///< the body's work stands
  aborted,    ///< a nested block, its aborted outcome returned to its parent
  rollback,   ///< a top-level block rolled the job back to the last checkpoint
  recovery,   ///< a process failed: the runtime's repair with spares
  abort,      ///< fx::TryBlockAborted was thrown
};

/// What a TryBlock decided, the same on every participant.
struct TryOutcome {
  std::string name;        ///< the block's name
  bool committed = false;  ///< the deciding attempt committed
  int attempts = 0;        ///< times the body ran
  /// The deciding attempt's group error state, by rank then error; empty
  /// when committed. Identical on every participant.
  std::vector<TryRankError> errors;
  /// The errors of each earlier, aborted attempt (soft retries).
  std::vector<std::vector<TryRankError>> history;
  /// Blocks nested in the deciding attempt, in the order they completed.
  std::vector<TryOutcome> inner;
  TryAction action = TryAction::aborted;  ///< what became of the block

  /// Whether the block committed.
  /// \return `committed`
  explicit operator bool() const { return committed; }
  /// Whether some rank asserted `error`.
  /// \param error one error (a single bit)
  /// \return true when `errors` (the deciding attempt's) has it
  bool has(TryError error) const;
  /// The ranks that asserted `error`, in order.
  /// \param error one error (a single bit)
  /// \return ranks in the block's communicator, ascending; empty when none did
  std::vector<int> ranks_with(TryError error) const;
  /// "committed after 2 attempts; attempt 1: rank 2 incorrect_result", or
  /// "aborted (rollback) after 3 attempts: rank 1 timeout; ...", one line.
  /// \return that line, nested blocks' outcomes included
  std::string describe() const;
};

/// A block's own policy; unset fields take the configuration's `tryblock:` values.
struct TryOptions {
  std::optional<int> soft_retries;  ///< default: tryblock.soft_retries
  std::optional<double> timeout_s;  ///< default: tryblock.timeout_s
  std::optional<bool> rollback;     ///< default: tryblock.rollback
  /// Data-store members saved at admission and put back before a retry or
  /// after an abort; default: every registered member.
  std::optional<std::vector<std::string>> save;
  /// Agree on admission before the body runs (one more agreement): no rank
  /// starts the body unless every rank of the group has arrived in time.
  bool sync_admission = false;
  /// Nested blocks: an aborted block asserts its errors in the enclosing one.
  bool propagate = true;
};

namespace detail {
struct TryFrame;
struct TryAccess;
}  // namespace detail

/// A block's body; it runs once per attempt.
using TryBody = std::function<void(TryScope&)>;

/// The body's handle on its block. Messages started through it use the
/// block's communicator and tags 0..kMaxTag-1 (mapped to a range of their own
/// per attempt, so a stale message of an aborted attempt never matches).
class TryScope {
 public:
  static constexpr int kMaxTag = 1024;  ///< message tags are 0..kMaxTag-1

  /// The block's name.
  /// \return the name given to try_block(), valid during the body
  const std::string& name() const;
  /// The block's communicator.
  /// \return the group's communicator, valid during the body
  const Comm& comm() const;
  /// This rank in comm().
  /// \return 0..size()-1
  int rank() const;
  /// The size of comm().
  /// \return the number of ranks in the block's group
  int size() const;
  /// The attempt number, 1 for the first run of the body.
  /// \return the attempt running now: 1 + the soft retries so far
  int attempt() const;
  /// Seconds left before the block times out.
  /// \return seconds until the attempt's deadline, >= 0
  double remaining() const;

  /// Start sending `n` T's to `dest`, or receiving them from `src`, in this
  /// block (tag in 0..kMaxTag-1, else UsageError); wait() completes them.
  /// A failed MPI call is not thrown: it is asserted as the block's error.
  ///@{
  /// Start sending `n` T's to `dest`.
  /// \param buf `n` elements, left untouched until wait() returns
  /// \param n the number of elements
  /// \param dest the receiver's rank in comm()
  /// \param tag 0..kMaxTag-1
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws UsageError for a tag outside 0..kMaxTag-1 or a count over MPI's int limit
  template <class T>
  void isend(const T* buf, std::size_t n, int dest, int tag, CallSite site = {}) {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Isend", site);
    start(buf, c, t, dest, tag, true);
  }
  /// Start receiving `n` T's from `src`.
  /// \param buf room for `n` elements, filled when wait() returns true
  /// \param n the number of elements expected
  /// \param src the sender's rank in comm()
  /// \param tag 0..kMaxTag-1
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws UsageError for a tag outside 0..kMaxTag-1 or a count over MPI's int limit
  template <class T>
  void irecv(T* buf, std::size_t n, int src, int tag, CallSite site = {}) {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Irecv", site);
    start(buf, c, t, src, tag, false);
  }
  ///@}
  /// Complete the messages started so far, waiting at most timeout_s (< 0:
  /// until the block's deadline). False if one failed or time ran out; the
  /// error is asserted and the block will abort.
  /// \param timeout_s seconds to wait at most; < 0: until the block's deadline
  /// \return true when every message completed and no error was asserted meanwhile
  bool wait(double timeout_s = -1);

  /// Assert a local error: the block aborts on every rank of the group.
  /// \param error one error (a single bit), recorded for this rank in the outcome
  void raise_error(TryError error);
  /// Nothing asserted here so far.
  /// \return true while this rank has asserted no error and seen no process failure
  bool ok() const;

  /// A nested block (over this block's communicator, or a subgroup): it
  /// commits or aborts on its own; the outcome is returned and also kept in
  /// inner(). Nested blocks retry but never roll back: after the retries an
  /// aborted outcome comes back (and, with propagate, aborts this block).
  ///@{
  /// A nested block over this block's communicator.
  /// \param name the block's name, in its outcome, the report and errors
  /// \param body run once per attempt, on every rank of comm()
  /// \param options the block's own policy (`rollback` is not used); unset fields: the
  ///   `tryblock:` settings
  /// \return the outcome, the same on every rank of comm()
  /// \throws ProcessFailure when a process failed: the runtime's repair takes over (let it
  ///   propagate)
  /// \throws UsageError for invalid options, a `save` naming no registered member, a group
  ///   not valid here, or ranks that did not all enter the same blocks in the same order
  /// \throws ConfigError when the body threw one: rethrown on its rank, never retried, as a
  ///   UsageError or a non-fx exception from the body is (the other ranks throw ProcessFailure)
  /// \throws MpiError when an agreement fails for a reason other than a process failure
  TryOutcome try_block(const std::string& name, const TryBody& body, const TryOptions& options = {});
  /// A nested block over `group`, a subgroup of comm().
  /// \param name the block's name, in its outcome, the report and errors
  /// \param group the ranks that run the block; every one of them must call this
  /// \param body run once per attempt, on every rank of `group`
  /// \param options the block's own policy (`rollback` is not used); unset fields: the
  ///   `tryblock:` settings
  /// \return the outcome, the same on every rank of `group`
  /// \throws ProcessFailure when a process failed: the runtime's repair takes over (let it
  ///   propagate)
  /// \throws UsageError for invalid options, a `save` naming no registered member, a group
  ///   not valid here, or ranks that did not all enter the same blocks in the same order
  /// \throws ConfigError when the body threw one: rethrown on its rank, never retried, as a
  ///   UsageError or a non-fx exception from the body is (the other ranks throw ProcessFailure)
  /// \throws MpiError when an agreement fails for a reason other than a process failure
  TryOutcome try_block(const std::string& name, const Comm& group, const TryBody& body,
                       const TryOptions& options = {});
  ///@}
  /// A nested block completed together with this one: one agreement decides
  /// both (and every other deferred block); its outcome lands in inner().
  /// An aborted deferred block aborts this block.
  /// \param name the nested block's name, in its outcome
  /// \param body run now, once, over comm(), with this block's deadline
  void defer(const std::string& name, const TryBody& body);
  /// The nested blocks completed so far in this attempt, in that order.
  /// \return their outcomes, valid during the body
  const std::vector<TryOutcome>& inner() const;

 private:
  friend struct detail::TryAccess;
  explicit TryScope(detail::TryFrame& frame) : frame_(frame) {}
  void start(const void* buf, int count, MPI_Datatype type, int peer, int tag, bool send);
  detail::TryFrame& frame_;
};

/// Outcomes this process saw that were not a first-attempt commit (retried,
/// rolled back, recovered or aborted), oldest first; at most 1000 kept.
/// \param ctx the application's context
/// \return the outcomes (the oldest dropped beyond 1000), valid while `ctx` is
const std::vector<TryOutcome>& try_log(Context& ctx);

}  // namespace fx

FX_ENUM_NAMES(fx::TryError, {fx::TryError::incorrect_result, "incorrect_result"},
              {fx::TryError::user_assertion, "user_assertion"}, {fx::TryError::timeout, "timeout"},
              {fx::TryError::process_failure, "process_failure"}, {fx::TryError::unknown, "unknown"})
FX_ENUM_NAMES(fx::TryAction, {fx::TryAction::committed, "committed"}, {fx::TryAction::aborted, "aborted"},
              {fx::TryAction::rollback, "rollback"}, {fx::TryAction::recovery, "recovery"},
              {fx::TryAction::abort, "abort"})
