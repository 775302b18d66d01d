#include "plan.hpp"

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>

namespace fx::detail {
namespace {

const SlotSummary* find_slot(const Inventory& inv, std::int64_t it, int size,
                             const std::function<bool(const SlotSummary&)>& pred) {
  for (const auto& s : inv.slots) {
    if (s.iteration == it && s.size == size && pred(s)) return &s;
  }
  return nullptr;
}

const SlotSummary* own_slot(const std::vector<Inventory>& all, int q, std::int64_t it) {
  const int n = static_cast<int>(all.size());
  return find_slot(all[static_cast<std::size_t>(q)], it, n,
                   [q](const SlotSummary& s) { return s.own_rank == q; });
}

const SlotSummary* held_slot(const std::vector<Inventory>& all, int h, int q, std::int64_t it) {
  const int n = static_cast<int>(all.size());
  return find_slot(all[static_cast<std::size_t>(h)], it, n,
                   [q](const SlotSummary& s) { return s.held_rank == q; });
}

const SlotSummary* parity_slot(const std::vector<Inventory>& all, int q, std::int64_t it) {
  const int n = static_cast<int>(all.size());
  return find_slot(all[static_cast<std::size_t>(q)], it, n,
                   [q](const SlotSummary& s) { return s.own_rank == q && s.parity == 1; });
}

// A copy of rank q's image held by another rank: the designated holder
// first, then anyone (the distance may have changed). nullptr when none.
const SlotSummary* find_held_copy(const std::vector<Inventory>& all, int q, std::int64_t it, int distance,
                                  int& holder) {
  const int n = static_cast<int>(all.size());
  const int designated = buddy_of(q, n, distance);
  const SlotSummary* s = held_slot(all, designated, q, it);
  holder = designated;
  for (int h = 0; h < n && !s; ++h) {
    if ((s = held_slot(all, h, q, it))) holder = h;
  }
  return s;
}

// Where rank q's image comes from: its own copy or a rank holding one.
// False (q is lost) when neither has it.
bool plan_buddy_source(const std::vector<Inventory>& all, int q, std::int64_t it, int distance,
                       RestorePlan& plan) {
  RankPlan& rp = plan.ranks[static_cast<std::size_t>(q)];
  if (const auto* s = own_slot(all, q, it)) {
    rp.source = Source::own;
    rp.bytes = s->own_bytes;
    rp.header = s->own_header;
    plan.sequence = s->sequence;
    return true;
  }
  int holder = -1;
  const SlotSummary* s = find_held_copy(all, q, it, distance, holder);
  if (!s) {
    plan.lost.push_back(q);
    return false;
  }
  rp.source = Source::buddy;
  rp.holder = holder;
  rp.bytes = s->held_bytes;
  rp.header = s->held_header;
  plan.sequence = s->sequence;
  return true;
}

// The designated holders without a copy get a fresh one after the restore.
void plan_buddy_protection(const std::vector<Inventory>& all, std::int64_t it, int distance,
                           RestorePlan& plan) {
  const int n = static_cast<int>(all.size());
  for (int q = 0; q < n; ++q) {
    RankPlan& rp = plan.ranks[static_cast<std::size_t>(q)];
    const int h = buddy_of(q, n, distance);
    if (held_slot(all, h, q, it)) continue;
    rp.protect_to = h;
    // From q's own copy (restored by then), never from a holder's held copy:
    // a holder that is itself a protect_to has its held copy replaced by
    // that receive before the sends start (issue 14).
    rp.protect_from = q;
  }
}

// A rank pulls its image straight into its members when it need not send
// it on and its holder receives no fresh copy into the buffer it sends from.
void plan_direct_pulls(int n, RestorePlan& plan) {
  std::vector<char> receiving(static_cast<std::size_t>(n), 0);
  for (const auto& rp : plan.ranks)
    if (rp.protect_to >= 0) receiving[static_cast<std::size_t>(rp.protect_to)] = 1;
  for (auto& rp : plan.ranks)
    rp.direct =
        rp.source == Source::buddy && rp.protect_to < 0 && !receiving[static_cast<std::size_t>(rp.holder)];
}

// Buddy scheme: every rank from its own copy or from a rank holding a copy.
bool plan_buddy(const std::vector<Inventory>& all, std::int64_t it, int distance, RestorePlan& plan) {
  const int n = static_cast<int>(all.size());
  bool ok = true;
  for (int q = 0; q < n; ++q) ok = plan_buddy_source(all, q, it, distance, plan) && ok;
  if (!ok || n < 2) return ok;
  plan_buddy_protection(all, it, distance, plan);
  plan_direct_pulls(n, plan);
  return true;
}

// The ranks of group g restored from their own copies; returns the others.
std::vector<int> plan_own_in_group(const std::vector<Inventory>& all, const ParityGroup& g, std::int64_t it,
                                   RestorePlan& plan) {
  std::vector<int> missing;
  for (int q = g.first; q < g.first + g.count; ++q) {
    if (const auto* s = own_slot(all, q, it)) {
      plan.ranks[static_cast<std::size_t>(q)].source = Source::own;
      plan.sequence = s->sequence;
    } else {
      missing.push_back(q);
    }
  }
  return missing;
}

// The stripe to rebuild the one missing image of group g from: every other
// rank's parity block, all of one stripe. 0 when it cannot be rebuilt.
std::uint64_t rebuild_stripe(const std::vector<Inventory>& all, const ParityGroup& g,
                             const std::vector<int>& missing, std::int64_t it) {
  std::uint64_t stripe = 0;
  bool rebuildable = missing.size() == 1 && g.count >= 2;
  for (int q = g.first; q < g.first + g.count && rebuildable; ++q) {
    if (q == missing.front()) continue;
    const auto* s = parity_slot(all, q, it);
    if (!s || (stripe != 0 && s->stripe != stripe))
      rebuildable = false;
    else
      stripe = s->stripe;
  }
  return rebuildable ? stripe : 0;
}

// A parity block missing in group g (but for the image rebuilt) has the
// parity recomputed after the restore.
void plan_reencode(const std::vector<Inventory>& all, const ParityGroup& g, const std::vector<int>& missing,
                   std::int64_t it, RestorePlan& plan) {
  for (int q = g.first; q < g.first + g.count; ++q) {
    if (missing.size() != 1 || q != missing.front()) {
      if (!parity_slot(all, q, it)) plan.reencode_parity = true;
    }
  }
}

// Parity scheme: at most one rank per group without its own copy, rebuilt
// from the others' images and parity blocks.
bool plan_parity(const std::vector<Inventory>& all, std::int64_t it, int group, RestorePlan& plan) {
  const int n = static_cast<int>(all.size());
  bool ok = true;
  for (int first = 0; first < n;) {
    const ParityGroup g = parity_group(first, n, group);
    const std::vector<int> missing = plan_own_in_group(all, g, it, plan);
    const std::uint64_t stripe = rebuild_stripe(all, g, missing, it);
    if (stripe > 0) {
      RankPlan& rp = plan.ranks[static_cast<std::size_t>(missing.front())];
      rp.source = Source::parity;
      rp.bytes = stripe;
    } else if (!missing.empty()) {
      plan.lost.insert(plan.lost.end(), missing.begin(), missing.end());
      ok = false;
    }
    plan_reencode(all, g, missing, it, plan);
    first = g.first + g.count;
  }
  return ok;
}

}  // namespace

int buddy_of(int rank, int size, int distance) { return size > 0 ? (rank + distance) % size : -1; }

int buddy_source(int rank, int size, int distance) {
  return size > 0 ? ((rank - distance) % size + size) % size : -1;
}

ParityGroup parity_group(int rank, int size, int group) {
  if (group < 2 || size < 2) return {0, size};
  const int groups = std::max(1, size / group);
  const int g = std::min(rank / group, groups - 1);
  const int first = g * group;
  return {first, g == groups - 1 ? size - first : group};
}

RestorePlan plan_restore(const std::vector<Inventory>& all, int distance, bool parity, int group) {
  const int n = static_cast<int>(all.size());
  RestorePlan plan;
  std::vector<std::int64_t> its;
  for (const auto& inv : all) {
    plan.history = plan.history || inv.sequence > 0;
    plan.resized_pending = plan.resized_pending || inv.resized_from_storage;
    for (const auto& s : inv.slots) {
      if (s.size == n && s.iteration >= 0) its.push_back(s.iteration);
    }
  }
  std::sort(its.rbegin(), its.rend());
  its.erase(std::unique(its.begin(), its.end()), its.end());
  std::vector<int> everywhere_lost;
  for (std::size_t k = 0; k < its.size(); ++k) {
    RestorePlan trial;
    trial.history = plan.history;
    trial.resized_pending = plan.resized_pending;
    trial.ranks.assign(static_cast<std::size_t>(n), RankPlan{});
    const bool ok =
        parity ? plan_parity(all, its[k], group, trial) : plan_buddy(all, its[k], distance, trial);
    if (k == 0) {
      plan.lost = trial.lost;
      plan.lost_iteration = trial.lost.empty() ? -1 : its[k];
      everywhere_lost = trial.lost;
    } else {
      std::vector<int> both;
      std::set_intersection(everywhere_lost.begin(), everywhere_lost.end(), trial.lost.begin(),
                            trial.lost.end(), std::back_inserter(both));
      everywhere_lost = both;
    }
    if (ok) {
      trial.iteration = its[k];
      trial.lost = plan.lost;
      trial.lost_iteration = plan.lost_iteration;
      return trial;
    }
  }
  plan.unrecoverable = everywhere_lost;
  return plan;
}

int choose_buddy_distance(const std::vector<std::string>& hosts, int preferred) {
  const int n = static_cast<int>(hosts.size());
  if (n < 2) return 0;
  const int d0 = (std::max(preferred, 1) - 1) % (n - 1) + 1;
  int best = d0;
  int best_count = std::numeric_limits<int>::max();
  for (int k = 0; k < n - 1; ++k) {
    const int d = (d0 - 1 + k) % (n - 1) + 1;
    int same = 0;
    for (int r = 0; r < n; ++r)
      same += hosts[static_cast<std::size_t>(r)] == hosts[static_cast<std::size_t>((r + d) % n)];
    if (same < best_count) {
      best = d;
      best_count = same;
    }
    if (same == 0) break;
  }
  return best;
}

}  // namespace fx::detail
