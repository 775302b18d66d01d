// The XOR ring of a parity commit: see parity_ring.hpp.
#include "parity_ring.hpp"

#include <algorithm>

#include "slot.hpp"
#include "xor.hpp"

#if defined(__SANITIZE_THREAD__)
#define FX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FX_TSAN 1
#endif
#endif

#ifdef FX_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
extern "C" void AnnotateIgnoreWritesBegin(const char* file, int line);
extern "C" void AnnotateIgnoreWritesEnd(const char* file, int line);
#endif

namespace fx::detail {
namespace {

// dst ^= src for a block a receive delivered. On the store's thread its
// bytes may have been written by the main thread's MPI call (Open MPI's
// single-copy transfer runs in whichever thread's call matched it), an
// order that MPI_Test's completion gives but ThreadSanitizer cannot see
// (Open MPI is not instrumented): under TSan the XOR's accesses are left
// out of its checks, the rest of the ring is not.
void xor_received(std::byte* dst, const std::byte* src, std::size_t n) {
#ifdef FX_TSAN
  AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
  AnnotateIgnoreWritesBegin(__FILE__, __LINE__);
#endif
  xor_into(dst, src, n);
#ifdef FX_TSAN
  AnnotateIgnoreWritesEnd(__FILE__, __LINE__);
  AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
}

}  // namespace

ParityStripe parity_stripe(const std::vector<std::uint64_t>& sizes) {
  const auto m = static_cast<std::uint64_t>(sizes.size());
  if (m < 2 || std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) return {};
  const std::uint64_t biggest = *std::max_element(sizes.begin(), sizes.end());
  const std::uint64_t unit = 64 * (m - 1);  // chunks stay 64-byte aligned
  const std::uint64_t stripe = (biggest + unit - 1) / unit * unit;
  return {stripe, stripe / (m - 1)};
}

int ParityRing::start(MPI_Comm comm, const ParityGroup& g, int rank, std::uint64_t chunk, Buffers b) {
  comm_ = comm;
  m_ = g.count;
  const int idx = rank - g.first;
  next_ = g.first + (idx + 1) % m_;
  prev_ = g.first + (idx + m_ - 1) % m_;
  chunk_ = chunk;
  b_ = b;
  requests_.clear();
  step_ = 1;
  out_ = this->chunk(m_ - 2);
  return post();
}

// Step t sends the partial block of the step before (first: a chunk of
// this rank's image) and receives the next one, into the scratch buffer
// the step before did not use (the last step: into `block`).
int ParityRing::post() {
  in_ = step_ == m_ - 1 ? b_.block : b_.scratch[step_ % 2];
  int rc = post_message(comm_, const_cast<std::byte*>(out_), chunk_, next_, kTagParity, true, requests_);
  if (rc == MPI_SUCCESS) rc = post_message(comm_, in_, chunk_, prev_, kTagParity, false, requests_);
  return rc;
}

int ParityRing::advance(bool block, bool& done) {
  done = step_ >= m_;
  while (!done) {
    bool complete = false;
    int rc = test_all(requests_, block, complete);
    if (rc != MPI_SUCCESS || !complete) return rc;
    requests_.clear();
    // The block received gets this rank's chunk for the ring's next member.
    if (step_ < m_ - 1) {
      xor_received(in_, chunk(m_ - 2 - step_), chunk_);
      out_ = in_;
    }
    done = ++step_ == m_;
    if (!done && (rc = post()) != MPI_SUCCESS) return rc;
  }
  return MPI_SUCCESS;
}

}  // namespace fx::detail
