#include <fx/clock.hpp>
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

// MPI_Datatype-free exchange of identities over the shrunk world.
int gather_identities(MPI_Comm comm, const Identity& mine, std::vector<Identity>& all) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  all.assign(static_cast<std::size_t>(n), Identity{});
  int triple[3] = {mine.world_rank, mine.logical, mine.fatal};
  std::vector<int> flat(3 * static_cast<std::size_t>(n));
  const int rc = MPI_Allgather(triple, 3, MPI_INT, flat.data(), 3, MPI_INT, comm);
  if (rc != MPI_SUCCESS) return rc;
  for (int i = 0; i < n; ++i)
    all[static_cast<std::size_t>(i)] = {flat[3 * i], flat[3 * i + 1], flat[3 * i + 2]};
  return MPI_SUCCESS;
}

void discard(MPI_Comm& comm) {
  if (comm == MPI_COMM_NULL) return;
  ulfm::revoke(comm);
  MPI_Comm_free(&comm);
}

}  // namespace

RepairResult repair(const RepairRequest& req) {
  RepairResult res;
  MPI_Comm current = req.world;
  MPI_Comm owned = MPI_COMM_NULL;  // a shrunk world from an abandoned round
  int world_rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  const Identity mine{world_rank, req.my_logical, req.my_fatal ? 1 : 0};

  for (int round = 1; round <= req.max_rounds; ++round) {
    res.rounds = round;
    double t = now();
    ulfm::revoke(current);  // idempotent; wakes anyone not yet in repair
    res.times.revoke += now() - t;

    t = now();
    MPI_Comm shrunk = MPI_COMM_NULL;
    int rc = ulfm::shrink(current, &shrunk);
    res.times.shrink += now() - t;
    if (rc != MPI_SUCCESS) {
      log::warn("repair round {}: MPIX_Comm_shrink returned {}; retrying", round, ulfm::error_name(rc));
      continue;
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    discard(owned);
    owned = shrunk;
    current = shrunk;

    t = now();
    std::vector<Identity> live;
    rc = gather_identities(shrunk, mine, live);
    res.times.agree += now() - t;
    if (rc != MPI_SUCCESS) {
      log::warn("repair round {}: identity exchange returned {}; new failure, next round", round,
                ulfm::error_name(rc));
      continue;
    }
    const Plan plan = plan_repair(live, req.active_size, req.shrink_when_exhausted);
    int me = 0;
    MPI_Comm_rank(shrunk, &me);
    const int my_new = plan.new_logical[static_cast<std::size_t>(me)];

    t = now();
    MPI_Comm app = MPI_COMM_NULL;
    int ok = 1;
    if (!plan.exhausted) {
      rc = MPI_Comm_split(shrunk, my_new >= 0 ? 0 : MPI_UNDEFINED, my_new, &app);
      ok = rc == MPI_SUCCESS ? 1 : 0;
    }
    // The outcome is only valid once every live process has it.
    const ulfm::Agreement agreed = ulfm::agree_value(shrunk, ok);
    rc = agreed.rc;
    ok = agreed.flag;
    res.times.rebuild += now() - t;
    if (rc != MPI_SUCCESS || !ok) {
      log::warn("repair round {}: rebuild not agreed ({}); next round", round, ulfm::error_name(rc));
      discard(app);
      continue;
    }
    if (app != MPI_COMM_NULL) MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);

    std::set<int> alive;
    for (const auto& id : live) {
      alive.insert(id.world_rank);
      if (id.fatal) res.fatal_world_ranks.push_back(id.world_rank);
    }
    for (const auto& id : req.members) {
      if (!alive.count(id.world_rank)) res.failed.push_back(id);
    }
    res.world = shrunk;
    res.app = app;
    res.my_logical = plan.exhausted ? req.my_logical : my_new;
    res.active_size = plan.active_size;
    res.exhausted = plan.exhausted;
    res.shrunk = plan.shrunk;
    res.members = live;
    for (std::size_t i = 0; i < live.size(); ++i) {
      res.members[i].fatal = 0;
      if (!plan.exhausted) res.members[i].logical = plan.new_logical[i];
    }
    return res;
  }
  discard(owned);
  FX_THROW(RecoveryFailed, fmt::format("repair gave up after {} rounds, each interrupted by a new failure "
                                       "(recovery.max_rounds = {})",
                                       req.max_rounds, req.max_rounds));
}

}  // namespace fx::detail
