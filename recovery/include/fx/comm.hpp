#pragma once
/// \file
/// fx::Comm: a communicator whose calls turn process failures into
/// fx::ProcessFailure at the call boundary (never inside MPI's error handler).
/// Before throwing, the failure handler revokes every communicator fx knows,
/// so the other ranks and the spares are woken too.
#include <fx/error.hpp>
#include <mpi.h>

#include <climits>
#include <complex>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace fx {

/// Where the application called an fx::Comm function: its errors name that
/// place, not this header. A defaulted last argument, filled in at the call.
struct CallSite {
#if defined(__GNUC__) || defined(__clang__)
  /// Defaulted: the caller's file and line (GCC and Clang builtins).
  /// \param f the source file, a string literal (kept as a pointer, not copied)
  /// \param l the line in `f`
  CallSite(const char* f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
#else
  /// Other compilers: "<unknown>", 0.
  /// \param f the source file, a string literal (kept as a pointer, not copied)
  /// \param l the line in `f`
  CallSite(const char* f = "<unknown>", int l = 0) : file(f), line(l) {}
#endif
  const char* file;  ///< the caller's source file
  int line;          ///< the caller's line
};

namespace detail {

struct CommAccess;
[[noreturn]] void throw_count_too_large(const char* call, std::size_t count, const char* type, CallSite site);

/// Implemented by the runtime: called once per failed call, before the throw.
class FailureHandler {
 public:
  virtual ~FailureHandler() = default;
  virtual void on_failure(MPI_Comm where, int rc, const char* call) = 0;
  /// Non-blocking: has a repair started elsewhere (the world was revoked)?
  /// Agreements poll this, because a revoke does not interrupt
  /// MPIX_Comm_agree: without it, ranks waiting in an agreement would wait
  /// forever for ranks that left for the repair. A process death alone is
  /// not one: the agreement completes without the dead.
  virtual bool interrupted() { return false; }
};

/// The communicator a Comm refers to. The runtime swaps `raw` after a repair,
/// so every copy of a Comm the application keeps follows the rebuilt one.
struct CommSlot {
  MPI_Comm raw = MPI_COMM_NULL;
  FailureHandler* handler = nullptr;
};

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, double>)
    return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, float>)
    return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, int>)
    return MPI_INT;
  else if constexpr (std::is_same_v<T, unsigned>)
    return MPI_UNSIGNED;
  else if constexpr (std::is_same_v<T, long>)
    return MPI_LONG;
  else if constexpr (std::is_same_v<T, unsigned long>)
    return MPI_UNSIGNED_LONG;
  else if constexpr (std::is_same_v<T, long long>)
    return MPI_LONG_LONG;
  else if constexpr (std::is_same_v<T, unsigned long long>)
    return MPI_UNSIGNED_LONG_LONG;
  else if constexpr (std::is_same_v<T, char>)
    return MPI_CHAR;
  else if constexpr (std::is_same_v<T, unsigned char> || std::is_same_v<T, std::byte>)
    return MPI_BYTE;
  else if constexpr (std::is_same_v<T, std::complex<double>>)
    return MPI_CXX_DOUBLE_COMPLEX;
  else
    return MPI_DATATYPE_NULL;
}

/// (count, type) for a buffer of n T's: typed when MPI knows T, else bytes.
/// MPI counts are ints: a larger one is refused, never truncated.
template <class T>
std::pair<int, MPI_Datatype> mpi_buffer(std::size_t n, const char* call, CallSite site) {
  static_assert(std::is_trivially_copyable_v<T>, "fx::Comm sends trivially copyable types only");
  const MPI_Datatype t = mpi_type<T>();
  const std::size_t count = t != MPI_DATATYPE_NULL ? n : n * sizeof(T);
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw_count_too_large(call, count, t != MPI_DATATYPE_NULL ? "elements" : "bytes", site);
  }
  return {static_cast<int>(count), t != MPI_DATATYPE_NULL ? t : MPI_BYTE};
}

}  // namespace detail

class Comm;

/// A nonblocking operation started through fx::Comm.
class Request {
 public:
  Request() = default;
  /// The MPI request, for raw MPI calls.
  /// \return a pointer into this Request (valid as long as it); MPI_REQUEST_NULL once completed
  MPI_Request* raw() { return &req_; }

 private:
  friend class Comm;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

/// A communicator handle: each call below checks MPI's result (see check()).
/// Counts are elements of T (typed when MPI knows T, else bytes); `site`
/// names the caller in errors.
class Comm {
 public:
  Comm() = default;
  /// An untracked communicator: no repair follows it, and a failed call
  /// throws without revoking anything first (a communicator fx knows comes
  /// from Context::comm(), split() or dup()).
  /// \param raw the MPI communicator; not owned (never freed through a Comm)
  explicit Comm(MPI_Comm raw) : Comm(raw, nullptr) {}

  /// The MPI communicator now.
  /// \return the current one (another after a repair); MPI_COMM_NULL for a default Comm
  MPI_Comm raw() const { return slot_ ? slot_->raw : MPI_COMM_NULL; }
  /// Whether it refers to one.
  /// \return raw() != MPI_COMM_NULL
  bool valid() const { return raw() != MPI_COMM_NULL; }
  /// This process's rank in it.
  /// \return 0..size()-1
  int rank() const;
  /// Its number of ranks.
  /// \return the communicator's size (>= 1)
  int size() const;

  /// Throws ProcessFailure (after the handler ran) or MpiError unless rc is
  /// MPI_SUCCESS. Use through FX_CHECK_MPI.
  /// \param rc what an MPI call on this communicator returned
  /// \param call the call, as errors name it (FX_CHECK_MPI passes its text)
  /// \param file the caller's source file, a string literal
  /// \param line the line in `file`
  /// \throws ProcessFailure for a process failure or a revoked communicator, with the failed
  ///   world ranks MPI reports
  /// \throws MpiError for any other error code
  void check(int rc, const char* call, const char* file, int line) const;

  /// MPI_Send of `n` T's to `dest`.
  /// \param buf `n` elements to send
  /// \param n the number of elements
  /// \param dest the receiver's rank in this communicator
  /// \param tag the message tag (0..MPI_TAG_UB)
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  void send(const T* buf, std::size_t n, int dest, int tag, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Send", site);
    check(MPI_Send(buf, c, t, dest, tag, raw()), "MPI_Send", site.file, site.line);
  }
  /// MPI_Recv of `n` T's from `src`.
  /// \param buf room for `n` elements
  /// \param n the number of elements expected (a longer message is an MpiError)
  /// \param src the sender's rank in this communicator, or MPI_ANY_SOURCE
  /// \param tag the message tag, or MPI_ANY_TAG
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  void recv(T* buf, std::size_t n, int src, int tag, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Recv", site);
    check(MPI_Recv(buf, c, t, src, tag, raw(), MPI_STATUS_IGNORE), "MPI_Recv", site.file, site.line);
  }
  /// MPI_Isend of `n` T's to `dest`; wait() completes it.
  /// \param buf `n` elements, left untouched until wait() returns
  /// \param n the number of elements
  /// \param dest the receiver's rank in this communicator
  /// \param tag the message tag (0..MPI_TAG_UB)
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \return the request, for wait() or wait_all()
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  Request isend(const T* buf, std::size_t n, int dest, int tag, CallSite site = {}) const {
    Request r;
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Isend", site);
    check(MPI_Isend(buf, c, t, dest, tag, raw(), &r.req_), "MPI_Isend", site.file, site.line);
    return r;
  }
  /// MPI_Irecv of `n` T's from `src`; wait() completes it.
  /// \param buf room for `n` elements, filled when wait() returns
  /// \param n the number of elements expected
  /// \param src the sender's rank in this communicator, or MPI_ANY_SOURCE
  /// \param tag the message tag, or MPI_ANY_TAG
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \return the request, for wait() or wait_all()
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  Request irecv(T* buf, std::size_t n, int src, int tag, CallSite site = {}) const {
    Request r;
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Irecv", site);
    check(MPI_Irecv(buf, c, t, src, tag, raw(), &r.req_), "MPI_Irecv", site.file, site.line);
    return r;
  }
  /// MPI_Sendrecv: `sn` T's to `dest` and `rn` T's from `src`, both with `tag`.
  /// \param sbuf `sn` elements to send
  /// \param sn the number of elements sent
  /// \param dest the receiver's rank in this communicator
  /// \param rbuf room for `rn` elements (not overlapping `sbuf`)
  /// \param rn the number of elements expected
  /// \param src the sender's rank in this communicator
  /// \param tag the tag of both messages
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  void sendrecv(const T* sbuf, std::size_t sn, int dest, T* rbuf, std::size_t rn, int src, int tag,
                CallSite site = {}) const {
    auto [sc, st] = detail::mpi_buffer<T>(sn, "MPI_Sendrecv", site);
    auto [rc, rt] = detail::mpi_buffer<T>(rn, "MPI_Sendrecv", site);
    check(MPI_Sendrecv(sbuf, sc, st, dest, tag, rbuf, rc, rt, src, tag, raw(), MPI_STATUS_IGNORE),
          "MPI_Sendrecv", site.file, site.line);
  }
  /// MPI_Wait on `r`.
  /// \param r a request isend() or irecv() on this communicator returned; completed after
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  void wait(Request& r, CallSite site = {}) const;
  /// wait() on each, in order.
  /// \param rs requests isend() or irecv() on this communicator returned; completed after
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked (the
  ///   requests after the one that failed are left pending)
  /// \throws MpiError when MPI fails for another reason
  void wait_all(std::vector<Request>& rs, CallSite site = {}) const;

  /// MPI_Allreduce of `n` T's with `op` (in place when `in` == `out`).
  /// \param in `n` elements of this rank
  /// \param out room for the `n` results (may be `in`)
  /// \param n the number of elements
  /// \param op the reduction (MPI_SUM, MPI_MAX, ...)
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  void allreduce(const T* in, T* out, std::size_t n, MPI_Op op, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Allreduce", site);
    check(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, c, t, op, raw()), "MPI_Allreduce", site.file,
          site.line);
  }
  /// `value` reduced with `op` over every rank.
  /// \param value this rank's value
  /// \param op the reduction (MPI_SUM, MPI_MAX, ...)
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \return the result, the same on every rank
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  template <class T>
  T allreduce(T value, MPI_Op op, CallSite site = {}) const {
    allreduce(&value, &value, 1, op, site);
    return value;
  }
  /// MPI_Bcast of `n` T's from `root`.
  /// \param buf `n` elements: read on `root`, overwritten elsewhere
  /// \param n the number of elements
  /// \param root the sending rank in this communicator
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  /// \throws UsageError when the count exceeds MPI's int limit
  template <class T>
  void bcast(T* buf, std::size_t n, int root, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Bcast", site);
    check(MPI_Bcast(buf, c, t, root, raw()), "MPI_Bcast", site.file, site.line);
  }
  /// Every rank's `value`, in rank order (MPI_Allgather).
  /// \param value this rank's contribution
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \return size() values, the i-th from rank i
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  template <class T>
  std::vector<T> allgather(const T& value, CallSite site = {}) const {
    std::vector<T> out(static_cast<std::size_t>(size()));
    auto [c, t] = detail::mpi_buffer<T>(1, "MPI_Allgather", site);
    check(MPI_Allgather(&value, c, t, out.data(), c, t, raw()), "MPI_Allgather", site.file, site.line);
    return out;
  }
  /// Gather one value per rank to `root` in rank order (a fixed-order basis
  /// for reductions whose result must not depend on who holds which rank).
  /// \param value this rank's contribution
  /// \param root the rank that receives them
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \return on `root`, size() values, the i-th from rank i; empty on the other ranks
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  template <class T>
  std::vector<T> gather(const T& value, int root, CallSite site = {}) const {
    std::vector<T> out(rank() == root ? static_cast<std::size_t>(size()) : 0);
    auto [c, t] = detail::mpi_buffer<T>(1, "MPI_Gather", site);
    check(MPI_Gather(&value, c, t, out.data(), c, t, root, raw()), "MPI_Gather", site.file, site.line);
    return out;
  }
  /// MPI_Barrier.
  /// \param site the caller's file and line, for errors (leave it defaulted)
  /// \throws ProcessFailure when a process of the communicator failed or it was revoked
  /// \throws MpiError when MPI fails for another reason
  void barrier(CallSite site = {}) const;
  /// ULFM agreement (bitwise AND of flag over live ranks); throws on failure,
  /// and leaves (throwing ProcessFailure) when the handler reports a repair
  /// under way elsewhere.
  /// \param flag this rank's bits
  /// \return the AND of every live rank's `flag`, the same on each
  /// \throws ProcessFailure when the agreement failed or a repair started elsewhere
  /// \throws MpiError when MPI fails for another reason
  int agree(int flag) const;

 private:
  // The runtime's alone, through detail::CommAccess (recovery/private): a
  // Comm reporting to its failure handler, one following a slot it swaps
  // after a repair, and those two.
  friend struct detail::CommAccess;
  Comm(MPI_Comm raw, detail::FailureHandler* handler);
  explicit Comm(std::shared_ptr<detail::CommSlot> slot) : slot_(std::move(slot)) {}
  detail::FailureHandler* handler() const { return slot_ ? slot_->handler : nullptr; }
  const std::shared_ptr<detail::CommSlot>& slot() const { return slot_; }
  std::shared_ptr<detail::CommSlot> slot_;
};

/// For code that calls MPI itself on a raw communicator fx gave it
/// (ctx.comm().raw(), or one from ctx.split()/dup()) and holds no
/// fx::Comm, such as a library's: returns on MPI_SUCCESS; on a process
/// failure or a revoked communicator, revokes `comm` (so every rank leaves
/// its own calls on it) and throws fx::ProcessFailure, which fx repairs as
/// any other (the step is abandoned and run again from the restored
/// checkpoint); on any other error throws fx::MpiError naming `call` and
/// the caller's line. Code that checks no return code at all is still
/// covered at the step's end (docs/user-guide.md: "Code that calls MPI
/// itself").
/// \code
///   fx::check_mpi(comm, MPI_Sendrecv(..., comm, MPI_STATUS_IGNORE), "MPI_Sendrecv");
/// \endcode
/// \param comm the raw communicator the call was made on (revoked on a failure)
/// \param rc what the call returned
/// \param call the call, as errors name it
/// \param site the caller's file and line, for errors (leave it defaulted)
/// \throws ProcessFailure for a process failure or a revoked communicator
/// \throws MpiError for any other error code
void check_mpi(MPI_Comm comm, int rc, const char* call = "an MPI call", CallSite site = {});

}  // namespace fx

/// Check a raw MPI call made on an fx communicator:
/// \code
///   FX_CHECK_MPI(ctx.comm(), MPI_Send(buf, n, MPI_DOUBLE, 1, 0, ctx.comm().raw()));
/// \endcode
/// \param comm the fx::Comm the call was made on
/// \param call the MPI call expression (its text names it in errors)
#define FX_CHECK_MPI(comm, call) (comm).check((call), #call, __FILE__, __LINE__)
