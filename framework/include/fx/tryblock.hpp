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

  explicit operator bool() const { return committed; }  ///< committed
  bool has(TryError error) const;                       ///< whether some rank asserted `error`
  std::vector<int> ranks_with(TryError error) const;    ///< the ranks that asserted `error`, in order
  /// "committed after 2 attempts; attempt 1: rank 2 incorrect_result", or
  /// "aborted (rollback) after 3 attempts: rank 1 timeout; ...", one line.
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

  const std::string& name() const;  ///< the block's name
  const Comm& comm() const;         ///< the block's communicator
  int rank() const;                 ///< this rank in comm()
  int size() const;                 ///< comm()'s size
  int attempt() const;              ///< 1 for the first run of the body
  double remaining() const;         ///< seconds left before the block times out

  /// Start sending `n` T's to `dest`, or receiving them from `src`, in this
  /// block (tag in 0..kMaxTag-1, else UsageError); wait() completes them.
  ///@{
  template <class T>
  void isend(const T* buf, std::size_t n, int dest, int tag, CallSite site = {}) {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Isend", site);
    start(buf, c, t, dest, tag, true);
  }
  template <class T>
  void irecv(T* buf, std::size_t n, int src, int tag, CallSite site = {}) {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Irecv", site);
    start(buf, c, t, src, tag, false);
  }
  ///@}
  /// Complete the messages started so far, waiting at most timeout_s (< 0:
  /// until the block's deadline). False if one failed or time ran out; the
  /// error is asserted and the block will abort.
  bool wait(double timeout_s = -1);

  /// Assert a local error: the block aborts on every rank of the group.
  void raise_error(TryError error);
  bool ok() const;  ///< nothing asserted here so far

  /// A nested block (over this block's communicator, or a subgroup): it
  /// commits or aborts on its own; the outcome is returned and also kept in
  /// inner(). Nested blocks retry but never roll back: after the retries an
  /// aborted outcome comes back (and, with propagate, aborts this block).
  ///@{
  TryOutcome try_block(const std::string& name, const TryBody& body, const TryOptions& options = {});
  TryOutcome try_block(const std::string& name, const Comm& group, const TryBody& body,
                       const TryOptions& options = {});
  ///@}
  /// A nested block completed together with this one: one agreement decides
  /// both (and every other deferred block); its outcome lands in inner().
  /// An aborted deferred block aborts this block.
  void defer(const std::string& name, const TryBody& body);
  /// The nested blocks completed so far in this attempt, in that order.
  const std::vector<TryOutcome>& inner() const;

 private:
  friend struct detail::TryAccess;
  explicit TryScope(detail::TryFrame& frame) : frame_(frame) {}
  void start(const void* buf, int count, MPI_Datatype type, int peer, int tag, bool send);
  detail::TryFrame& frame_;
};

/// Outcomes this process saw that were not a first-attempt commit (retried,
/// rolled back, recovered or aborted), oldest first; at most 1000 kept.
const std::vector<TryOutcome>& try_log(Context& ctx);

}  // namespace fx

FX_ENUM_NAMES(fx::TryError, {fx::TryError::incorrect_result, "incorrect_result"},
              {fx::TryError::user_assertion, "user_assertion"}, {fx::TryError::timeout, "timeout"},
              {fx::TryError::process_failure, "process_failure"}, {fx::TryError::unknown, "unknown"})
FX_ENUM_NAMES(fx::TryAction, {fx::TryAction::committed, "committed"}, {fx::TryAction::aborted, "aborted"},
              {fx::TryAction::rollback, "rollback"}, {fx::TryAction::recovery, "recovery"},
              {fx::TryAction::abort, "abort"})
