#pragma once
// A version on this rank (Slot) and the messages that move versions
// (Transfer): what the store's core and its levels share.
#include <fx/comm.hpp>

#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "buffer.hpp"
#include "image.hpp"
#include "plan.hpp"

namespace fx::detail {

constexpr int kHostName = 64;  // characters of a host name in the inventory exchange

// Message tags of the store, on its own communicator (a duplicate of the
// app's): they only keep the store's exchanges apart from each other.
enum Tag : int {
  kTagSize = 0x5f00,
  kTagImage,
  kTagPull,
  kTagProtect,
  kTagParity,
  kTagRebuild,
  kTagPrior,        // restore_resized: old images to the ranks that want them
  kTagStatic,       // static members: a rank's own (publish, restore)
  kTagStaticHeld,   // static members: the buddy's copy (restore)
  kTagNode,         // node level: an image from the rank that read it to its rank
  kTagOwnCopy,      // restore: a recovered rank's own copy, after its members
  kTagNodePartner,  // node level under parity: the image of the rank whose partner copy this one writes
  kTagReport,       // HDF5 level: a rank's report of its file, to rank 0 (the manifest)
};

// This process's host name (MPI_Get_processor_name), NUL-terminated.
std::array<char, kHostName> host_name();

// One version on this rank: its own image and the redundancy it holds for
// others (a buddy's image, or a parity block).
// A recovered rank's pull straight into its members (pull_buddy).
struct Pull {
  bool direct = false;      // member messages (else one image into the slot)
  bool compatible = false;  // the header matches the registered members
  ImageInfo info;
  std::string error;  // why the members cannot be used
};

struct Slot {
  std::int64_t iteration = -1;
  std::int64_t sequence = 0;
  int size = 0;  // app size when taken
  Buffer own;
  ImageInfo own_info;
  bool own_ok = false;  // own image complete (own_info.rank is the logical rank)
  Buffer held;
  std::uint64_t held_header = 0;
  int held_rank = -1;  // buddy: whose image `held` is
  bool held_ok = false;
  bool parity_ok = false;    // parity: `held` is this rank's complete parity block
  std::uint64_t stripe = 0;  // parity: padded image size of the group
  bool committed = false;

  void clear_flags();
  // `held` now holds a complete image of `rank`.
  void hold(int rank, std::uint64_t header);
  SlotSummary summary() const;
};

// Nonblocking messages completed together. Messages over 1 GiB go in
// pieces (MPI counts are int). On a failure the comm is revoked, so every
// peer's pending operations end too, and unfinished requests are handed to
// `orphans`, drained before the store touches its buffers again.
class Transfer {
 public:
  Transfer(const Comm& comm, std::vector<MPI_Request>& orphans) : comm_(comm), orphans_(orphans) {}
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  void send(const std::byte* data, std::size_t n, int peer, int tag);
  void recv(std::byte* data, std::size_t n, int peer, int tag);
  // Send `out` to `dest` and receive `in` from `src` (empty ones skipped),
  // the send posted first. A large message is copied by its receiver when
  // it matches (single-copy shared memory): posted receive first, the peer
  // that posts second copies ours inside its receive before its own send
  // is even announced, and the two copies run one after the other (an
  // asynchronous 64 MiB buddy exchange took 21 ms that way, 11 ms now).
  void exchange(const std::byte* out, std::size_t out_n, int dest, std::byte* in, std::size_t in_n, int src,
                int tag);
  void wait();
  // Hand the requests over for completion later (background work).
  std::vector<MPI_Request> release();

 private:
  void fail(int rc);  // throws
  const Comm& comm_;
  std::vector<MPI_Request>& orphans_;
  std::vector<MPI_Request> requests_;
};

// Post a message of n bytes in pieces of at most 1 GiB into `rs`; the
// first error's code, else MPI_SUCCESS. Throws nothing: a thread of the
// store's posts with it too.
int post_message(MPI_Comm comm, std::byte* data, std::size_t n, int peer, int tag, bool send,
                 std::vector<MPI_Request>& rs);
// Test (block: wait for) every request of `rs`; `done` false while some
// are pending. The first error's code, the rest left as they are.
int test_all(std::vector<MPI_Request>& rs, bool block, bool& done);

}  // namespace fx::detail
