#pragma once
// Where each old rank's image is after a shrink, computed identically on
// every rank from the exchanged inventories of the versions taken before
// it (their SlotSummary names OLD logical ranks). No MPI: unit-tested alone.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan.hpp"

namespace fx::detail {

struct PriorSource {
  int holder = -1;          // new rank holding the image (-1: nowhere in memory)
  bool own = false;         // its own copy (else the buddy copy it holds)
  bool parity = false;      // rebuilt by `holder` from its old parity group
  std::uint64_t bytes = 0;  // image size (parity: the group's stripe)
};

struct PriorPlan {
  int old_size = 0;             // wrote `iteration` (none complete: the newest); 0: no version
  std::int64_t iteration = -1;  // newest version complete in memory (-1: none)
  std::int64_t sequence = 0;
  std::vector<PriorSource> sources;  // per old rank, for `iteration`
  // Versions newer than `iteration` (all, when it is -1), newest first,
  // with the old ranks whose images were nowhere.
  struct Lost {
    std::int64_t iteration = -1;
    int size = 0;  // the ranks that wrote it
    std::vector<int> ranks;
  };
  std::vector<Lost> lost;
  // A rank committed or restored a version before (its sequence > 0): an
  // incomplete one alone is then a loss, else a commit that never ended.
  bool history = false;
};

// inventories[p]: new rank p's versions of the sizes before, any order;
// the plan takes the newest version complete among them, whatever its size.
// parity_group > 0 (scheme: parity): an image lost alone in its old group
// is rebuilt from the group's other images and parity blocks by the new
// rank holding the lowest of them.
PriorPlan plan_prior(const std::vector<std::vector<SlotSummary>>& inventories, int parity_group = 0);

// The plan's lost images for messages: "<ranks_word> [1] of iteration 10, ...".
std::string lost_text(const PriorPlan& plan, std::string_view ranks_word);

}  // namespace fx::detail
