// The checkpoint levels, listed once, and the walks over them: a commit
// hands its version down to the levels due, a restore reads them newest
// version first.
#include <fx/clock.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "level.hpp"
#include "store_impl.hpp"

namespace fx {

using detail::Level;

void Level::read_prior(const detail::StoredPrior& p, const detail::PriorRequest& r,
                       detail::PriorPieces& pieces) {
  (void)p;
  (void)r;
  pieces.error = fmt::format("{} holds no version of another job size", name());
}

// Fastest first: restore() reads them in this order, and on a tie (the same
// iteration in two levels) the earlier one wins. Memory comes first.
std::vector<detail::LevelMaker> detail::standard_levels() { return {memory_level, node_level, hdf5_level}; }

detail::Levels DataStore::Impl::make_levels(const std::vector<detail::LevelMaker>& makers) {
  detail::Levels l;
  for (const auto& make : makers) l.push_back(make(context, options));
  return l;
}

Level& DataStore::Impl::memory() { return *levels.front(); }

bool DataStore::Impl::storage_due(std::int64_t seq) const {
  for (const auto& l : levels)
    if (l->storage() && l->due(seq)) return true;
  return false;
}

bool DataStore::Impl::storage_on() const {
  for (const auto& l : levels)
    if (l->storage() && l->on()) return true;
  return false;
}

// Each storage level due writes, then publishes (collective), in order;
// each one's time into `c.stats`, its level the last one's.
void DataStore::Impl::keep_below(detail::Slot& s, const detail::KeepContext& c) {
  for (const auto& l : levels) {
    if (!l->storage() || !l->due(s.sequence)) continue;
    publish_one(*l, s, c, write_one(*l, s, c.stats));
  }
}

std::vector<std::string> DataStore::Impl::write_below(const detail::Slot& s, CheckpointStats& st) {
  std::vector<std::string> errors;
  for (const auto& l : levels)
    if (l->storage() && l->due(s.sequence)) errors.push_back(write_one(*l, s, st));
  return errors;
}

CheckpointLevel DataStore::Impl::deepest_due(std::int64_t seq) const {
  CheckpointLevel id = CheckpointLevel::memory;
  for (const auto& l : levels)
    if (l->storage() && l->due(seq)) id = l->id();
  return id;
}

void DataStore::Impl::post_below(const detail::Slot& s, const detail::KeepContext& c, detail::Transfer& t) {
  for (const auto& l : levels) {
    if (!l->storage() || !l->due(s.sequence)) continue;
    const double t0 = now();
    l->post_publish(s, c, t);
    l->seconds(c.stats) += now() - t0;
  }
}

void DataStore::Impl::conclude_below(detail::Slot& s, CheckpointStats& st, int wrote,
                                     const std::vector<std::string>& errors) {
  std::size_t i = 0;
  for (const auto& l : levels) {
    if (!l->storage() || !l->due(s.sequence)) continue;
    const double t0 = now();
    const bool all_wrote = ((wrote >> i) & 1) != 0;
    l->conclude_publish(s, all_wrote, errors.at(i++));
    l->seconds(st) += now() - t0;
  }
}

std::string DataStore::Impl::write_one(Level& l, const detail::Slot& s, CheckpointStats& st) {
  const double t = now();
  std::string error;
  try {
    error = l.write(s, st);
  } catch (const std::exception& e) {  // on the writer thread: nothing else may catch it
    error = e.what();
  }
  l.seconds(st) = now() - t;
  return error;
}

void DataStore::Impl::publish_one(Level& l, detail::Slot& s, const detail::KeepContext& c,
                                  const std::string& error) {
  const double t = now();
  l.publish(s, c, error);
  c.stats.level = l.id();
  l.seconds(c.stats) += now() - t;
}

void DataStore::Impl::adopt(std::unique_ptr<detail::Slot> slot, std::int64_t iteration, std::int64_t seq) {
  for (std::size_t i = versions.size(); i-- > 0;) retire(i);
  slot->iteration = iteration;
  slot->sequence = seq;
  slot->size = size();
  slot->own_ok = true;
  slot->committed = true;
  versions.push_back(std::move(slot));
  committed = iteration;
  sequence = seq;
  if (parity() || size() < 2)
    protect(*versions.back(), true);
  else
    protect_buddy(*versions.back(), true, true);
}

std::string DataStore::Impl::below_memory() const {
  std::vector<std::string> on;
  for (const auto& l : levels)
    if (l->storage() && l->on()) on.emplace_back(l->name());
  if (on.empty()) return "no level below memory is on";
  return fmt::format("trying {}", fmt::join(on, " and "));
}

namespace {

// The levels of one tier (memory, or storage) that this restore reads.
std::vector<Level*> levels_reading(const detail::Levels& levels, bool storage,
                                   const detail::RestoreFacts& f) {
  std::vector<Level*> tier;
  for (const auto& l : levels)
    if (l->storage() == storage && l->reads(f)) tier.push_back(l.get());
  return tier;
}

// The level of `tier` whose next version to try is the newest (the earlier
// one on a tie), or nullptr when none has any left.
Level* newest_next(const std::vector<Level*>& tier) {
  Level* best = nullptr;
  for (Level* l : tier)
    if (l->next() >= 0 && (best == nullptr || l->next() > best->next())) best = l;
  return best;
}

}  // namespace

// Memory alone first: it holds every committed version before any level
// below copies it, so storage is read only when memory has nothing usable.
// Then the storage levels this restore reads, together, newest version
// first. Each level's time goes to its part of `st`.
std::optional<std::pair<CheckpointLevel, std::int64_t>> DataStore::Impl::walk(const detail::RestoreFacts& f,
                                                                              CheckpointStats& st) {
  for (const bool storage : {false, true}) {
    const std::vector<Level*> tier = levels_reading(levels, storage, f);
    if (tier.empty()) continue;
    if (storage) settle_background();  // a failed memory restore may have left copies running
    auto timed = [&](Level* l, const auto& body) {
      const double t = now();
      body();
      l->seconds(st) += now() - t;
    };
    for (Level* l : tier) timed(l, [&] { l->open(f); });
    for (;;) {
      Level* best = newest_next(tier);
      if (best == nullptr) break;
      const std::int64_t it = best->next();
      bool ok = false;
      timed(best, [&] { ok = best->load(); });
      if (ok) return std::make_pair(best->id(), it);
      if (best->next() != it) st.skipped.push_back({best->id(), it, best->failure()});
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> DataStore::Impl::restore_from_levels(const detail::RestoreFacts& f,
                                                                 CheckpointStats& st) {
  auto conclude = [&] {
    st.seconds = now() - f.t0;
    st.bytes = 0;  // as restored: a resizable member at the version's extents
    for (const auto& m : members) st.bytes += m.bytes;
    st.device_seconds = staging.take_waited_seconds();
    restore_stats = st;
    restored_before = true;  // only a restore that returned has read storage (plan_without_exchange)
  };
  if (const auto got = walk(f, st)) {
    for (const auto& l : levels) l->set_aside_above(got->second);
    st.level = got->first;
    st.iteration = got->second;
    st.static_bytes_received = restore_statics(st.static_lost);
    conclude();
    return got->second;
  }
  std::vector<std::string> stops;
  for (const auto& l : levels)
    if (l->reads(f))
      if (std::string what = l->give_up(); !what.empty()) stops.push_back(std::move(what));
  if (!stops.empty()) {
    restore_stats = st;  // the report's record of the start names what was skipped
    FX_THROW(CheckpointLost, fmt::format("{}", fmt::join(stops, "; ")));
  }
  // A cold start that found nothing of this size, or a repair before the
  // first commit after one that resumed that way: a version written by
  // another number of ranks (a relaunch on fewer ranks) is restore_resized()'s.
  if ((!f.plan.history || f.plan.resized_pending) && (stored_prior = find_stored_prior(f))) {
    resize_from_storage = true;
    st.other_size = stored_prior->old_size;
    conclude();
    return std::nullopt;
  }
  // Lost: in-memory versions during a run, or node-local ones after a
  // relaunch (files left, but no version complete on the live hosts, or
  // none passing its checks). The first level that lost some names them.
  bool named = false;
  for (const auto& l : levels) {
    std::vector<int> ranks;
    if (!l->reads(f) || !l->lost(ranks)) continue;
    st.lost = true;
    if (!named) st.lost_ranks = ranks;
    named = true;
  }
  start_over();
  conclude();
  return std::nullopt;
}

// The newest complete version of another size among the levels `f` reads;
// the earlier level on a tie (a node-local copy needs no shared filesystem).
std::optional<detail::StoredPrior> DataStore::Impl::find_stored_prior(const detail::RestoreFacts& f) {
  std::optional<detail::StoredPrior> found;
  for (const auto& l : levels) {
    if (!l->storage() || !l->reads(f)) continue;
    auto p = l->prior();
    if (p && (!found || p->iteration > found->iteration)) found = std::move(p);
  }
  if (found && rank() == 0 && !f.plan.history) {
    log::info(
        "cold restart on {} ranks: the newest complete version is iteration {} ({}), written by {} ranks",
        size(), found->iteration, to_string(found->from->id()), found->old_size);
  } else if (found && rank() == 0) {
    log::info(
        "restore on {} ranks: nothing committed since the job resumed from iteration {} ({}) as written by "
        "{} ranks; resizing it again",
        size(), found->iteration, to_string(found->from->id()), found->old_size);
  }
  return found;
}

}  // namespace fx
