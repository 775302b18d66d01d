#pragma once
// PlainComm: raw MPI with the calling convention of fx::Comm (the subset
// the mini-app kernels use), so one templated kernel serves both the fx
// app and its plain MPI baseline. Errors are fatal (MPI's default handler):
// the baseline has no recovery, which is the point of the comparison.
#include <mpi.h>

#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

namespace miniapps {

class PlainComm {
 public:
  class Request {
   public:
    MPI_Request* raw() { return &req_; }

   private:
    friend class PlainComm;
    MPI_Request req_ = MPI_REQUEST_NULL;
  };

  explicit PlainComm(MPI_Comm raw = MPI_COMM_WORLD) : raw_(raw) {}
  MPI_Comm raw() const { return raw_; }
  int rank() const {
    int r = 0;
    MPI_Comm_rank(raw_, &r);
    return r;
  }
  int size() const {
    int s = 0;
    MPI_Comm_size(raw_, &s);
    return s;
  }

  template <class T>
  Request isend(const T* buf, std::size_t n, int dest, int tag) const {
    Request r;
    MPI_Isend(buf, bytes<T>(n), MPI_BYTE, dest, tag, raw_, &r.req_);
    return r;
  }
  template <class T>
  Request irecv(T* buf, std::size_t n, int src, int tag) const {
    Request r;
    MPI_Irecv(buf, bytes<T>(n), MPI_BYTE, src, tag, raw_, &r.req_);
    return r;
  }
  void wait_all(std::vector<Request>& rs) const {
    for (auto& r : rs) MPI_Wait(&r.req_, MPI_STATUS_IGNORE);
  }
  template <class T>
  std::vector<T> gather(const T& value, int root) const {
    std::vector<T> out(rank() == root ? static_cast<std::size_t>(size()) : 0);
    MPI_Gather(&value, bytes<T>(1), MPI_BYTE, out.data(), bytes<T>(1), MPI_BYTE, root, raw_);
    return out;
  }
  template <class T>
  void bcast(T* buf, std::size_t n, int root) const {
    MPI_Bcast(buf, bytes<T>(n), MPI_BYTE, root, raw_);
  }
  void barrier() const { MPI_Barrier(raw_); }

 private:
  template <class T>
  static int bytes(std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>, "PlainComm sends trivially copyable types only");
    return static_cast<int>(n * sizeof(T));
  }
  MPI_Comm raw_;
};

// The request type of a communicator type (fx::Request or PlainComm::Request).
template <class Comm>
using request_t = decltype(std::declval<const Comm&>().irecv(static_cast<double*>(nullptr), 0, 0, 0));

}  // namespace miniapps
