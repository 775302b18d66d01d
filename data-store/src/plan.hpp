#pragma once
// The decisions of the restore protocol, computed identically on every rank
// from the inventories all ranks exchanged: which version comes back, and
// who gets whose image from where. No MPI here, so it is unit-tested alone.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace fx::detail {

// One version slot of one rank, as exchanged (plain bytes over MPI).
struct SlotSummary {
  std::int64_t iteration = -1;
  std::int64_t sequence = 0;
  std::int32_t size = 0;        // app size when the version was taken
  std::int32_t own_rank = -1;   // complete own image of this logical rank (-1: none)
  std::int32_t held_rank = -1;  // buddy: complete copy of this rank's image (-1: none)
  std::int32_t parity = 0;      // parity: 1 when this rank's parity block is complete
  std::uint64_t own_bytes = 0;  // own image: total and header bytes
  std::uint64_t own_header = 0;
  std::uint64_t held_bytes = 0;  // held copy: total and header bytes
  std::uint64_t held_header = 0;
  std::uint64_t stripe = 0;  // parity: padded image bytes, common to the group
};
static_assert(std::is_trivially_copyable_v<SlotSummary>);

struct Inventory {
  std::int64_t sequence = 0;  // versions committed or restored so far (0: a fresh process)
  // resumed from a version of another job size in storage, and committed
  // none of this size since (DataStore::Impl::resize_from_storage)
  bool resized_from_storage = false;
  std::vector<SlotSummary> slots;
};

enum class Source { none, own, buddy, parity };

struct RankPlan {
  Source source = Source::none;
  int holder = -1;           // buddy: who sends this rank its image
  std::uint64_t bytes = 0;   // buddy: this rank's image size; parity: the stripe
  std::uint64_t header = 0;  // buddy: header bytes of that image
  int protect_to = -1;       // buddy: who must get a fresh copy of this rank's image
  int protect_from = -1;     // ... sent by this rank, from its (restored) own copy
  // buddy: the image comes straight into the members, the own copy later
  // (not when it must go out again at once, or its holder receives a fresh
  // copy into the buffer it would send from)
  bool direct = false;
};

struct RestorePlan {
  std::int64_t iteration = -1;  // -1: nothing restorable in memory
  std::int64_t sequence = 0;
  std::vector<RankPlan> ranks;
  bool history = false;              // a rank committed or restored before: not a cold start
  bool resized_pending = false;      // a rank's Inventory::resized_from_storage
  bool fresh = false;                // nothing anywhere, not even in storage: start afresh
  bool reencode_parity = false;      // parity blocks missing: recompute them after the restore
  std::int64_t lost_iteration = -1;  // the newest version, when it was not restorable...
  std::vector<int> lost;             // ...because these ranks' data was nowhere
  std::vector<int> unrecoverable;    // nothing restorable: ranks without a copy of any version
};

// Buddy placement on a ring of `size` logical ranks.
int buddy_of(int rank, int size, int distance);      // who holds rank's copy
int buddy_source(int rank, int size, int distance);  // whose copy rank holds

// XOR groups of `group` consecutive ranks; the last one takes the remainder.
struct ParityGroup {
  int first = 0;
  int count = 0;
};
ParityGroup parity_group(int rank, int size, int group);

RestorePlan plan_restore(const std::vector<Inventory>& all, int distance, bool parity, int group);

// The buddy distance to use: the preferred one unless it pairs ranks on the
// same host while another distance would not (a node failure would take a
// rank and its copy together).
int choose_buddy_distance(const std::vector<std::string>& hosts, int preferred);

}  // namespace fx::detail
