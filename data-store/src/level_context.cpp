// The levels' way into the store's core (level_context.hpp): each call
// forwards to DataStore::Impl.
#include "level_context.hpp"

#include "store_impl.hpp"

namespace fx::detail {

const Comm& LevelContext::comm() const { return core_.comm; }
int LevelContext::rank() const { return core_.rank(); }
int LevelContext::size() const { return core_.size(); }
bool LevelContext::agree(bool ok) { return core_.agree(ok ? 1 : 0) != 0; }
std::vector<std::string> LevelContext::gather_hosts() { return core_.gather_hosts(); }
int LevelContext::buddy_distance() const { return core_.distance; }
bool LevelContext::parity() const { return core_.parity(); }

Transfer LevelContext::transfer() { return Transfer(core_.comm, core_.orphans); }
void LevelContext::keep_until_drained(Buffer buffer) { core_.orphan_buffers.push_back(std::move(buffer)); }
void LevelContext::keep_until_drained(std::vector<Buffer>& buffers) { core_.keep_until_drained(buffers); }

std::vector<Member>& LevelContext::members() { return core_.members; }
void LevelContext::unpack(const ImageInfo& info, const std::byte* image, const std::string& what) {
  unpack_image(info, image, core_.members, what, &core_.staging);
}
void LevelContext::advise_fresh_members() { core_.advise_fresh_members(); }

std::unique_ptr<Slot> LevelContext::spare_slot() { return core_.spare_slot(); }
void LevelContext::give_back(std::unique_ptr<Slot> slot) {
  if (core_.pool.empty()) core_.pool.push_back(std::move(slot));
}
void LevelContext::adopt(std::unique_ptr<Slot> slot, std::int64_t iteration, std::int64_t sequence) {
  core_.adopt(std::move(slot), iteration, sequence);
}
std::string LevelContext::below_memory() const { return core_.below_memory(); }

void LevelContext::step(const char* name, double seconds) { core_.restore_steps.emplace_back(name, seconds); }
std::string LevelContext::steps_text(double& total) const { return core_.restore_steps_text(total); }

std::vector<std::vector<SlotSummary>> LevelContext::exchange_summaries(const std::vector<SlotSummary>& mine) {
  std::vector<std::vector<SlotSummary>> all;
  const auto k = core_.comm.allreduce<std::uint64_t>(mine.size(), MPI_MAX);
  if (k == 0) return all;
  for (auto& i : core_.exchange_summaries(mine, k, false)) all.push_back(std::move(i.slots));
  return all;
}
void LevelContext::fetch_prior(const StoredPrior& p, const PriorRequest& r, PriorPieces& pieces) {
  core_.fetch_prior(p.plan, p.iteration, r.want, r.wanted, pieces);
}

bool LevelContext::protect(Slot& s) { return core_.protect(s, s.own_ok); }
bool LevelContext::restore_memory(const RestorePlan& plan) { return core_.restore_memory(plan); }
void LevelContext::set_committed(std::int64_t iteration, std::int64_t sequence) {
  core_.committed = iteration;
  core_.sequence = sequence;
}
void LevelContext::drop_above(std::int64_t iteration) { core_.drop_above(iteration); }

}  // namespace fx::detail
