#pragma once
// The XOR ring of a parity commit (SCR's scheme, redundancy.cpp): each
// image of a group of m ranks, padded to the group's stripe, is cut into
// m-1 chunks; rank j ends with P_j, the XOR of one chunk of every other
// member, built on a ring in m-1 steps. A synchronous commit runs the ring
// to its end at once; an asynchronous one moves it on from progress() or
// on the store's exchange thread beside the app's steps.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "plan.hpp"

namespace fx::detail {

// Every image of a group padded to `stripe` bytes, cut into chunks of
// `chunk`; both 0 when some member of the group has no image.
struct ParityStripe {
  std::uint64_t stripe = 0;
  std::uint64_t chunk = 0;
};
// `sizes`: the image bytes of the group's members, in rank order.
ParityStripe parity_stripe(const std::vector<std::uint64_t>& sizes);

// One rank's part of the ring. It posts and tests messages and XORs
// chunks, and throws nothing: the store's thread may drive it.
class ParityRing {
 public:
  struct Buffers {
    std::byte* image = nullptr;  // this rank's image, padded to the stripe
    std::byte* block = nullptr;  // receives P_j (chunk bytes)
    std::byte* scratch[2] = {};  // the partial blocks passed on (chunk bytes each)
  };
  // Posts the first step; the first error's code, else MPI_SUCCESS.
  int start(MPI_Comm comm, const ParityGroup& g, int rank, std::uint64_t chunk, Buffers b);
  // Moves on as far as the messages allow (block: to the end); `done` once
  // `block` is complete. The first error's code, the requests left posted.
  int advance(bool block, bool& done);
  std::vector<MPI_Request>& requests() { return requests_; }

 private:
  int post();  // step_'s exchange with the ring's neighbours
  std::byte* chunk(int k) const { return b_.image + static_cast<std::uint64_t>(k) * chunk_; }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int m_ = 0, next_ = -1, prev_ = -1;
  std::uint64_t chunk_ = 0;
  Buffers b_;
  int step_ = 0;  // 1..m-1: the step whose messages are posted; m: done
  const std::byte* out_ = nullptr;
  std::byte* in_ = nullptr;
  std::vector<MPI_Request> requests_;
};

}  // namespace fx::detail
