#pragma once
// Static members on this rank (statics.cpp): whether the app's memory
// holds its static data, and the copy it holds for the rank it is buddy of.
#include <cstdint>
#include <vector>

#include "buffer.hpp"

namespace fx::detail {

struct StaticCopies {
  bool own = false;         // the app's static members hold this rank's data (published or restored)
  bool publish_due = true;  // the next commit sends them (same on every rank)
  int size = 0;             // of the comm the copies were made on
  int held_rank = -1;       // whose static data `held` is
  std::vector<std::uint64_t> held_sizes;
  std::vector<Buffer> held;  // one per static member
};

// One transfer of some rank's static data between two ranks.
struct StaticStream {
  int owner = -1;  // whose data
  int from = -1, to = -1;
  int tag = 0;
  std::vector<std::uint64_t> sizes;  // the header: bytes of every member
};

// A held copy on its way in: it replaces StaticCopies::held only once
// complete, since the old one may still be being sent.
struct IncomingHeld {
  int owner = -1;  // -1: none
  std::vector<std::uint64_t> sizes;
  std::vector<Buffer> buffers;
};

}  // namespace fx::detail
