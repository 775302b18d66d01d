#pragma once
// Static members on this rank (statics.cpp): whether the app's memory
// holds its static data, and the copy it holds for the rank it is buddy of.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "buffer.hpp"

namespace fx::detail {

// One transfer of some rank's static data between two ranks.
struct StaticStream {
  int owner = -1;  // whose data
  int from = -1, to = -1;
  int tag = 0;
  std::vector<std::uint64_t> sizes;  // the header: bytes of every member
};

struct StaticCopies {
  bool own = false;         // the app's static members hold this rank's data (published or restored)
  bool publish_due = true;  // the next commit sends them (same on every rank)
  int size = 0;             // of the comm the copies were made on
  int held_rank = -1;       // whose static data `held` is
  std::vector<std::uint64_t> held_sizes;
  std::vector<Buffer> held;  // one per static member
  // Buddy copies restore() re-makes after the app resumed (start_reprotection).
  std::vector<StaticStream> deferred;
};

// Every rank's static state (restore_statics): a row of whether its app
// holds its own data, whose copy it holds (+1; 0 for none), the byte counts
// of its own members and of the held copy.
struct StaticState {
  std::size_t members = 0;
  std::vector<std::uint64_t> rows;
  std::size_t row() const { return 2 + 2 * members; }
  const std::uint64_t* at(int q) const { return rows.data() + static_cast<std::size_t>(q) * row(); }
  bool own(int q) const { return at(q)[0] == 1; }
  int held_rank(int q) const { return static_cast<int>(at(q)[1]) - 1; }
  std::vector<std::uint64_t> own_sizes(int q) const { return {at(q) + 2, at(q) + 2 + members}; }
  std::vector<std::uint64_t> held_sizes(int q) const {
    return {at(q) + 2 + members, at(q) + 2 + 2 * members};
  }
};

// A held copy on its way in: it replaces StaticCopies::held only once
// complete, since the old one may still be being sent.
struct IncomingHeld {
  int owner = -1;  // -1: none
  std::vector<std::uint64_t> sizes;
  std::vector<Buffer> buffers;
};

}  // namespace fx::detail
