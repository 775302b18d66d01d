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
  CallSite(const char* f = __builtin_FILE(), int l = __builtin_LINE()) : file(f), line(l) {}
#else
  /// Other compilers: "<unknown>", 0.
  CallSite(const char* f = "<unknown>", int l = 0) : file(f), line(l) {}
#endif
  const char* file;  ///< the caller's source file
  int line;          ///< the caller's line
};

namespace detail {

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
  MPI_Request* raw() { return &req_; }  ///< the MPI request, for raw MPI calls

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
  /// An untracked communicator (no repair follows it).
  Comm(MPI_Comm raw, detail::FailureHandler* handler);
  /// A tracked communicator: it follows `slot`, which the runtime swaps after a repair.
  explicit Comm(std::shared_ptr<detail::CommSlot> slot) : slot_(std::move(slot)) {}

  MPI_Comm raw() const { return slot_ ? slot_->raw : MPI_COMM_NULL; }  ///< the MPI communicator now
  bool valid() const { return raw() != MPI_COMM_NULL; }                ///< whether it refers to one
  int rank() const;                                                    ///< this process's rank in it
  int size() const;                                                    ///< its number of ranks

  /// Throws ProcessFailure (after the handler ran) or MpiError unless rc is
  /// MPI_SUCCESS. Use through FX_CHECK_MPI.
  void check(int rc, const char* call, const char* file, int line) const;

  /// MPI_Send of `n` T's to `dest`.
  template <class T>
  void send(const T* buf, std::size_t n, int dest, int tag, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Send", site);
    check(MPI_Send(buf, c, t, dest, tag, raw()), "MPI_Send", site.file, site.line);
  }
  /// MPI_Recv of `n` T's from `src`.
  template <class T>
  void recv(T* buf, std::size_t n, int src, int tag, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Recv", site);
    check(MPI_Recv(buf, c, t, src, tag, raw(), MPI_STATUS_IGNORE), "MPI_Recv", site.file, site.line);
  }
  /// MPI_Isend of `n` T's to `dest`; wait() completes it.
  template <class T>
  Request isend(const T* buf, std::size_t n, int dest, int tag, CallSite site = {}) const {
    Request r;
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Isend", site);
    check(MPI_Isend(buf, c, t, dest, tag, raw(), &r.req_), "MPI_Isend", site.file, site.line);
    return r;
  }
  /// MPI_Irecv of `n` T's from `src`; wait() completes it.
  template <class T>
  Request irecv(T* buf, std::size_t n, int src, int tag, CallSite site = {}) const {
    Request r;
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Irecv", site);
    check(MPI_Irecv(buf, c, t, src, tag, raw(), &r.req_), "MPI_Irecv", site.file, site.line);
    return r;
  }
  /// MPI_Sendrecv: `sn` T's to `dest` and `rn` T's from `src`, both with `tag`.
  template <class T>
  void sendrecv(const T* sbuf, std::size_t sn, int dest, T* rbuf, std::size_t rn, int src, int tag,
                CallSite site = {}) const {
    auto [sc, st] = detail::mpi_buffer<T>(sn, "MPI_Sendrecv", site);
    auto [rc, rt] = detail::mpi_buffer<T>(rn, "MPI_Sendrecv", site);
    check(MPI_Sendrecv(sbuf, sc, st, dest, tag, rbuf, rc, rt, src, tag, raw(), MPI_STATUS_IGNORE),
          "MPI_Sendrecv", site.file, site.line);
  }
  void wait(Request& r, CallSite site = {}) const;                    ///< MPI_Wait on `r`
  void wait_all(std::vector<Request>& rs, CallSite site = {}) const;  ///< wait() on each, in order

  /// MPI_Allreduce of `n` T's with `op` (in place when `in` == `out`).
  template <class T>
  void allreduce(const T* in, T* out, std::size_t n, MPI_Op op, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Allreduce", site);
    check(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, c, t, op, raw()), "MPI_Allreduce", site.file,
          site.line);
  }
  /// `value` reduced with `op` over every rank.
  template <class T>
  T allreduce(T value, MPI_Op op, CallSite site = {}) const {
    allreduce(&value, &value, 1, op, site);
    return value;
  }
  /// MPI_Bcast of `n` T's from `root`.
  template <class T>
  void bcast(T* buf, std::size_t n, int root, CallSite site = {}) const {
    auto [c, t] = detail::mpi_buffer<T>(n, "MPI_Bcast", site);
    check(MPI_Bcast(buf, c, t, root, raw()), "MPI_Bcast", site.file, site.line);
  }
  /// Every rank's `value`, in rank order (MPI_Allgather).
  template <class T>
  std::vector<T> allgather(const T& value, CallSite site = {}) const {
    std::vector<T> out(static_cast<std::size_t>(size()));
    auto [c, t] = detail::mpi_buffer<T>(1, "MPI_Allgather", site);
    check(MPI_Allgather(&value, c, t, out.data(), c, t, raw()), "MPI_Allgather", site.file, site.line);
    return out;
  }
  /// Gather one value per rank to `root` in rank order (a fixed-order basis
  /// for reductions whose result must not depend on who holds which rank).
  template <class T>
  std::vector<T> gather(const T& value, int root, CallSite site = {}) const {
    std::vector<T> out(rank() == root ? static_cast<std::size_t>(size()) : 0);
    auto [c, t] = detail::mpi_buffer<T>(1, "MPI_Gather", site);
    check(MPI_Gather(&value, c, t, out.data(), c, t, root, raw()), "MPI_Gather", site.file, site.line);
    return out;
  }
  void barrier(CallSite site = {}) const;  ///< MPI_Barrier
  /// ULFM agreement (bitwise AND of flag over live ranks); throws on failure,
  /// and leaves (throwing ProcessFailure) when the handler reports a repair
  /// under way elsewhere.
  int agree(int flag) const;

  /// The handler its failures are reported to (null: none).
  detail::FailureHandler* handler() const { return slot_ ? slot_->handler : nullptr; }
  /// The slot it follows (shared by its copies).
  const std::shared_ptr<detail::CommSlot>& slot() const { return slot_; }

 private:
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
void check_mpi(MPI_Comm comm, int rc, const char* call = "an MPI call", CallSite site = {});

}  // namespace fx

/// Check a raw MPI call made on an fx communicator:
/// \code
///   FX_CHECK_MPI(ctx.comm(), MPI_Send(buf, n, MPI_DOUBLE, 1, 0, ctx.comm().raw()));
/// \endcode
#define FX_CHECK_MPI(comm, call) (comm).check((call), #call, __FILE__, __LINE__)
