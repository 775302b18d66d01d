#include <fx/clock.hpp>
#include <fx/detail/text.hpp>
#include <fx/error.hpp>
#include <fx/log.hpp>
#include <fx/recovery/repair.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace fx::detail {

Plan plan_repair(const std::vector<Identity>& live, int active_size, bool shrink_when_exhausted) {
  Plan plan;
  plan.new_logical.assign(live.size(), -1);
  std::vector<bool> held(static_cast<std::size_t>(active_size), false);
  std::vector<std::size_t> spares;  // indices into live, in world-rank order
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (live[i].logical >= 0) {
      held[static_cast<std::size_t>(live[i].logical)] = true;
      plan.new_logical[i] = live[i].logical;
    } else {
      spares.push_back(i);
    }
  }
  std::sort(spares.begin(), spares.end(),
            [&](std::size_t a, std::size_t b) { return live[a].world_rank < live[b].world_rank; });
  std::size_t next_spare = 0;
  int unfilled = 0;
  for (int l = 0; l < active_size; ++l) {
    if (held[static_cast<std::size_t>(l)]) continue;
    if (next_spare < spares.size()) {
      plan.new_logical[spares[next_spare++]] = l;
    } else {
      ++unfilled;
    }
  }
  plan.active_size = active_size;
  if (unfilled == 0) return plan;
  if (!shrink_when_exhausted) {
    plan.exhausted = true;
    return plan;
  }
  // Renumber the ranks that are left, keeping their order.
  std::vector<std::pair<int, std::size_t>> order;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (plan.new_logical[i] >= 0) order.emplace_back(plan.new_logical[i], i);
  }
  std::sort(order.begin(), order.end());
  for (std::size_t k = 0; k < order.size(); ++k) plan.new_logical[order[k].second] = static_cast<int>(k);
  plan.active_size = static_cast<int>(order.size());
  plan.shrunk = true;
  return plan;
}

namespace {

// Bits of the repair's agreement on the outcome (a bitwise AND over the live processes).
constexpr int kBuilt = 1;         // this process built its new app communicator
constexpr int kNoFatal = 2;       // this process hit no error that ends the job
constexpr int kCarriedShift = 2;  // the caller's bits (RepairRequest::carried) above these
constexpr int kCarriedMask = (1 << kCarriedBits) - 1;
constexpr int kGapTag = 0x0f11;  // fx's own message on a shrunk world

int my_world_rank() {
  int w = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &w);
  return w;
}

// Who is alive after a shrink of `world` (whose members are `known`), with
// O(log N) messages and no O(N) exchange: a shrink keeps the survivors in
// their order (Open MPI: the world's group minus the agreed failed group),
// so each survivor learns the gap of failed ranks just below it from its
// predecessor's old rank, and one reduction of the k failed ranks (k slots,
// each filled by the survivor above it) gives everyone the failed set.
// (MPI_Group_translate_ranks would do it locally, but Open MPI's is O(N^2).)
int live_members(MPI_Comm world, MPI_Comm shrunk, const std::vector<Identity>& known,
                 std::vector<Identity>& live) {
  int old_rank = 0, rank = 0, n = 0;
  MPI_Comm_rank(world, &old_rank);
  MPI_Comm_rank(shrunk, &rank);
  MPI_Comm_size(shrunk, &n);
  const int total = static_cast<int>(known.size());
  const int lost = total - n;
  int below = -1;  // the old rank of my predecessor in the shrunk world
  int rc = MPI_Sendrecv(&old_rank, 1, MPI_INT, rank + 1 < n ? rank + 1 : MPI_PROC_NULL, kGapTag, &below, 1,
                        MPI_INT, rank > 0 ? rank - 1 : MPI_PROC_NULL, kGapTag, shrunk, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return rc;
  std::vector<int> failed(static_cast<std::size_t>(lost), -1);
  auto mark = [&](int from, int to, int live_below) {  // old ranks [from, to) failed
    for (int f = from; f < to; ++f) {
      const int slot = f - live_below;
      if (slot >= 0 && slot < lost) failed[static_cast<std::size_t>(slot)] = f;
    }
  };
  mark(below + 1, old_rank, rank);
  if (rank == n - 1) mark(old_rank + 1, total, n);
  if (lost > 0) {
    rc = MPI_Allreduce(MPI_IN_PLACE, failed.data(), lost, MPI_INT, MPI_MAX, shrunk);
    if (rc != MPI_SUCCESS) return rc;
  }
  live.clear();
  std::size_t next = 0;
  for (int r = 0; r < total; ++r) {
    if (next < failed.size() && failed[next] == r)
      ++next;
    else
      live.push_back(known[static_cast<std::size_t>(r)]);
  }
  // Not in order after all (no MPI standard promises it): this process
  // finds itself elsewhere, and the agreement fails the round.
  if (static_cast<int>(live.size()) != n) live.assign(static_cast<std::size_t>(n), Identity{});
  return MPI_SUCCESS;
}

// The new app communicator in one step: its group, ordered by new logical
// rank, is known to every process from the plan, so MPI_Comm_create needs
// no exchange of keys (MPI_Comm_split's allgather); spares get MPI_COMM_NULL.
int create_app(MPI_Comm shrunk, const Plan& plan, MPI_Comm* app) {
  std::vector<int> by_logical(static_cast<std::size_t>(plan.active_size), -1);
  for (std::size_t i = 0; i < plan.new_logical.size(); ++i) {
    if (plan.new_logical[i] >= 0)
      by_logical[static_cast<std::size_t>(plan.new_logical[i])] = static_cast<int>(i);
  }
  MPI_Group all, group;
  MPI_Comm_group(shrunk, &all);
  MPI_Group_incl(all, plan.active_size, by_logical.data(), &group);
  const int rc = MPI_Comm_create(shrunk, group, app);
  MPI_Group_free(&group);
  MPI_Group_free(&all);
  return rc;
}

// The world ranks of the processes that asked to end the job, in order.
// Only after the agreement said there are some: rare, so an allgather.
int gather_fatal(MPI_Comm comm, const std::vector<Identity>& live, bool mine, std::vector<int>& out) {
  std::vector<int> flags(live.size());
  int me = mine ? 1 : 0;
  const int rc = MPI_Allgather(&me, 1, MPI_INT, flags.data(), 1, MPI_INT, comm);
  if (rc != MPI_SUCCESS) return rc;
  for (std::size_t i = 0; i < live.size(); ++i)
    if (flags[i]) out.push_back(live[i].world_rank);
  std::sort(out.begin(), out.end());
  return MPI_SUCCESS;
}

bool first_of(MPI_Comm comm) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  return me == 0;
}

void discard(MPI_Comm& comm) {
  if (comm == MPI_COMM_NULL) return;
  ulfm::revoke(comm);
  ulfm::release(comm);  // revoked: left to MPI
}

// Who is left, the plan and the new app communicator on `shrunk`; false
// when a step failed or the survivors' order was not kept.
bool rebuild(const RepairRequest& req, MPI_Comm shrunk, std::vector<Identity>& live, Plan& plan,
             MPI_Comm* app) {
  int me = 0;
  MPI_Comm_rank(shrunk, &me);
  if (live_members(req.world, shrunk, req.members, live) != MPI_SUCCESS) return false;
  plan = plan_repair(live, req.active_size, req.shrink_when_exhausted);
  if (!plan.exhausted && create_app(shrunk, plan, app) != MPI_SUCCESS) return false;
  return live[static_cast<std::size_t>(me)].world_rank == my_world_rank();
}

// The agreed plan into `res`: who failed, who is who now.
void settle(const RepairRequest& req, const std::vector<Identity>& live, const Plan& plan,
            RepairResult& res) {
  int me = 0;
  MPI_Comm_rank(res.world, &me);
  std::set<int> alive_world;
  for (const auto& id : live) alive_world.insert(id.world_rank);
  for (const auto& id : req.members) {
    if (!alive_world.count(id.world_rank)) res.failed.push_back(id);
  }
  res.my_logical = plan.exhausted ? req.my_logical : plan.new_logical[static_cast<std::size_t>(me)];
  res.active_size = plan.active_size;
  res.exhausted = plan.exhausted;
  res.shrunk = plan.shrunk;
  res.members = live;
  if (!plan.exhausted) {
    for (std::size_t i = 0; i < live.size(); ++i) res.members[i].logical = plan.new_logical[i];
  }
}

}  // namespace

RepairResult repair(const RepairRequest& req) {
  RepairResult res;
  MPI_Comm owned = MPI_COMM_NULL;  // a shrunk world from an abandoned round

  for (int round = 1; round <= req.max_rounds; ++round) {
    res.rounds = round;
    double t = now();
    ulfm::revoke(req.world);  // idempotent; wakes anyone not yet in repair
    res.times.revoke += now() - t;

    t = now();
    MPI_Comm shrunk = MPI_COMM_NULL;
    int rc = ulfm::shrink(req.world, &shrunk);
    res.times.shrink += now() - t;
    if (rc != MPI_SUCCESS) {
      log::warn("repair round {}: MPIX_Comm_shrink returned {}; retrying", round, ulfm::error_name(rc));
      continue;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    discard(owned);
    owned = shrunk;
    // Nobody revokes the shrunk world (below, on a failed rebuild) before
    // every live process has finished making it: a revoke that reaches a
    // process still inside MPIX_Comm_shrink crashes it (Open MPI 5.0.11,
    // SEGV in ompi_comm_revoke_local), a spare lost to a repair's own
    // revoke. The agreement completes only once all have entered it; its
    // outcome is the rebuild's to find.
    t = now();
    ulfm::agree_value(shrunk, 1);
    res.times.agree += now() - t;
    if (req.after_shrink) req.after_shrink();

    // Who is left, the plan and the new app communicator; then one
    // agreement makes the outcome (and any fatal error) common. Every round
    // shrinks the request's world, whose members are known. A process that
    // fails a step revokes the shrunk world, so whoever is still in one of
    // its collectives leaves it too: all meet in the agreement.
    t = now();
    std::vector<Identity> live;
    Plan plan;
    MPI_Comm app = MPI_COMM_NULL;
    const bool ok = rebuild(req, shrunk, live, plan, &app);
    if (!ok) ulfm::revoke(shrunk);
    res.times.rebuild += now() - t;

    t = now();
    const ulfm::Agreement agreed =
        ulfm::agree_value(shrunk, (ok ? kBuilt : 0) | (req.my_fatal ? 0 : kNoFatal) |
                                      (req.carried & kCarriedMask) << kCarriedShift);
    res.times.agree += now() - t;
    if (agreed.rc != MPI_SUCCESS || !(agreed.flag & kBuilt)) {
      // The same on every survivor: said by the shrunk world's first.
      if (first_of(shrunk))
        log::warn("repair round {}: rebuild not agreed ({}); next round", round, ulfm::error_name(agreed.rc));
      discard(app);
      continue;
    }
    // Who asked to end the job, only when someone did. Every process ends
    // then, so a new failure here only costs the names.
    res.fatal = !(agreed.flag & kNoFatal);
    if (res.fatal && gather_fatal(shrunk, live, req.my_fatal, res.fatal_world_ranks) != MPI_SUCCESS) {
      res.fatal_world_ranks.clear();
      if (req.my_fatal) res.fatal_world_ranks.push_back(my_world_rank());
    }
    if (app != MPI_COMM_NULL) MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
    res.world = shrunk;
    res.app = app;
    res.carried = agreed.flag >> kCarriedShift & kCarriedMask;
    settle(req, live, plan, res);
    return res;
  }
  discard(owned);
  FX_THROW(RecoveryFailed, fmt::format("repair gave up after {}, each interrupted by a new failure "
                                       "(recovery.max_rounds = {})",
                                       counted(req.max_rounds, "round"), req.max_rounds));
}

}  // namespace fx::detail
