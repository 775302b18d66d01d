#include <fx/clock.hpp>
#include <fx/data_store/member_shape.hpp>
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/log.hpp>
#include <fx/recovery/comm_access.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <tuple>

#include "store_impl.hpp"

namespace fx {
namespace detail {

constexpr std::size_t kMaxMessage = std::size_t{1} << 30;

void Slot::clear_flags() {
  iteration = -1;
  sequence = 0;
  size = 0;
  own_info = ImageInfo{};
  own_ok = held_ok = parity_ok = committed = false;
  held_header = 0;
  held_rank = -1;
  stripe = 0;
}

void Slot::hold(int rank, std::uint64_t header) {
  held_rank = rank;
  held_header = header;
  held_ok = true;
}

SlotSummary Slot::summary() const {
  SlotSummary s;
  s.iteration = iteration;
  s.sequence = sequence;
  s.size = size;
  if (own_ok) {
    s.own_rank = own_info.rank;
    s.own_bytes = own_info.total_bytes;
    s.own_header = own_info.payload_offset;
  }
  if (held_ok) {
    s.held_rank = held_rank;
    s.held_bytes = held.size();
    s.held_header = held_header;
  }
  s.parity = parity_ok ? 1 : 0;
  s.stripe = stripe;
  return s;
}

Transfer::~Transfer() {
  for (auto& r : requests_) {
    if (r != MPI_REQUEST_NULL) orphans_.push_back(r);
  }
}

void Transfer::exchange(const std::byte* out, std::size_t out_n, int dest, std::byte* in, std::size_t in_n,
                        int src, int tag) {
  if (out_n > 0) send(out, out_n, dest, tag);
  if (in_n > 0) recv(in, in_n, src, tag);
}

void Transfer::send(const std::byte* data, std::size_t n, int peer, int tag) {
  // MPI_Isend does not write its buffer; one loop serves both directions.
  const int rc = post_message(comm_.raw(), const_cast<std::byte*>(data), n, peer, tag, true, requests_);
  comm_.check(rc, "MPI_Isend (data store transfer)", __FILE__, __LINE__);
}

void Transfer::recv(std::byte* data, std::size_t n, int peer, int tag) {
  const int rc = post_message(comm_.raw(), data, n, peer, tag, false, requests_);
  comm_.check(rc, "MPI_Irecv (data store transfer)", __FILE__, __LINE__);
}

int post_message(MPI_Comm comm, std::byte* data, std::size_t n, int peer, int tag, bool send,
                 std::vector<MPI_Request>& rs) {
  const std::size_t pieces = std::max<std::size_t>(1, (n + kMaxMessage - 1) / kMaxMessage);
  for (std::size_t i = 0; i < pieces; ++i) {
    const std::size_t off = i * kMaxMessage;
    const int count = static_cast<int>(std::min(kMaxMessage, n - off));
    MPI_Request r = MPI_REQUEST_NULL;
    const int rc = send ? MPI_Isend(data + off, count, MPI_BYTE, peer, tag, comm, &r)
                        : MPI_Irecv(data + off, count, MPI_BYTE, peer, tag, comm, &r);
    if (rc != MPI_SUCCESS) return rc;
    rs.push_back(r);
  }
  return MPI_SUCCESS;
}

int test_all(std::vector<MPI_Request>& rs, bool block, bool& done) {
  done = true;
  for (auto& r : rs) {
    int flag = 1;
    const int rc = block ? MPI_Wait(&r, MPI_STATUS_IGNORE) : MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    done = done && flag;
  }
  return MPI_SUCCESS;
}

void Transfer::wait() {
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    const int rc = MPI_Wait(&requests_[i], MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) fail(rc);
  }
  requests_.clear();
}

void Transfer::fail(int rc) {
  // Revoke so that every peer's half of these messages ends as well; the
  // runtime's handler does the same, this covers a store used without it.
  if (ulfm::is_failure(rc)) ulfm::revoke(comm_.raw());
  comm_.check(rc, "MPI_Wait (data store transfer)", __FILE__, __LINE__);
}

std::vector<MPI_Request> Transfer::release() { return std::move(requests_); }

}  // namespace detail

using detail::Slot;

namespace detail {

std::unique_ptr<DataStore> StoreAccess::make(CheckpointConfig options,
                                             const std::vector<LevelMaker>& levels) {
  auto store = make(std::move(options));
  store->impl_->levels = store->impl_->make_levels(levels);
  return store;
}

int StoreAccess::facts(const DataStore& store) {
  const FreshFacts f = store.impl_->fresh_facts(store.comm_.size());
  return (f.nothing ? kNothing : 0) | (f.not_restored ? kNotRestored : 0);
}

void StoreAccess::agreed(DataStore& store, int facts) {
  store.impl_->repair_facts = FreshFacts{(facts & kNothing) != 0, (facts & kNotRestored) != 0};
}

void StoreAccess::start_over(DataStore& store) { store.impl_->start_over(); }

std::vector<const void*> StoreAccess::image_buffers(const DataStore& store) {
  std::vector<const void*> out;
  for (const auto* slots : {&store.impl_->versions, &store.impl_->pool})
    for (const auto& s : *slots)
      for (const Buffer* b : {&s->own, &s->held})
        if (b->data() != nullptr) out.push_back(b->data());
  return out;
}

int StoreAccess::pinned_images(const DataStore& store) {
  int n = 0;
  for (const auto* slots : {&store.impl_->versions, &store.impl_->pool})
    for (const auto& s : *slots) n += s->own.pinned() ? 1 : 0;
  return n;
}

int StoreAccess::buddy_distance_for(const std::vector<std::string>& hosts, int preferred) {
  return choose_buddy_distance(hosts, preferred);
}

}  // namespace detail

// ---------------------------------------------------------------- versions

std::unique_ptr<Slot> DataStore::Impl::spare_slot() {
  std::unique_ptr<Slot> s;
  if (!pool.empty()) {
    s = std::move(pool.back());
    pool.pop_back();
  } else {
    s = std::make_unique<Slot>();
  }
  s->clear_flags();
  return s;
}

void DataStore::Impl::reserve_slots(std::size_t bytes, bool holds) {
  // new_slot() recycles the oldest of `depth` versions (depth 1: of two).
  const std::size_t slots = static_cast<std::size_t>(std::max(depth(), 2));
  while (versions.size() + pool.size() < slots) {
    auto s = std::make_unique<Slot>();
    s->own.reset_touched(bytes, image_memory());
    if (holds) s->held.reset_touched(bytes);  // the buddy's image: its size, as a rule
    pool.push_back(std::move(s));
  }
}

detail::Memory DataStore::Impl::image_memory() const {
  const bool device =
      std::any_of(members.begin(), members.end(), [](const Member& m) { return m.to_host && m.bytes > 0; });
  return device ? detail::Memory::pinned : detail::Memory::pageable;
}

Slot& DataStore::Impl::new_slot(std::int64_t iteration, bool recycle) {
  std::unique_ptr<Slot> s;
  // Recycle the oldest version's buffers while keeping at least one
  // complete version besides the one being written.
  if (recycle && static_cast<int>(versions.size()) >= depth() && versions.size() >= 2) {
    s = std::move(versions.front());
    versions.erase(versions.begin());
    s->clear_flags();
  } else {
    s = spare_slot();
  }
  s->iteration = iteration;
  auto at =
      std::find_if(versions.begin(), versions.end(), [&](const auto& v) { return v->iteration > iteration; });
  return **versions.insert(at, std::move(s));
}

void DataStore::Impl::retire(std::size_t index) {
  auto s = std::move(versions[index]);
  versions.erase(versions.begin() + static_cast<std::ptrdiff_t>(index));
  s->clear_flags();
  if (pool.empty()) pool.push_back(std::move(s));  // one spare set of buffers at most
}

void DataStore::Impl::drop_from(std::int64_t iteration) {
  for (std::size_t i = versions.size(); i-- > 0;) {
    if (versions[i]->iteration >= iteration) retire(i);
  }
}

void DataStore::Impl::drop_above(std::int64_t iteration) { drop_from(iteration + 1); }

void DataStore::Impl::trim() {
  while (static_cast<int>(versions.size()) > depth()) retire(0);
}

Slot* DataStore::Impl::find(std::int64_t iteration) {
  for (auto& v : versions) {
    if (v->iteration == iteration) return v.get();
  }
  return nullptr;
}

Slot& DataStore::Impl::slot_for(std::int64_t iteration, int n) {
  if (Slot* s = find(iteration)) return *s;
  Slot& s = new_slot(iteration, false);
  s.size = n;
  return s;
}

int DataStore::Impl::agree(int flag) {
  // fx::Comm::agree keeps the flag in a heap cell (Open MPI's ERA can write
  // it after returning a failure) and leaves when a repair starts elsewhere.
  return comm.agree(flag);
}

std::string DataStore::Impl::restore_steps_text(double& total) const {
  std::string text;
  total = 0;
  for (const auto& [step, seconds] : restore_steps) {
    text += fmt::format("{}{} {:.1f}", text.empty() ? "" : ", ", step, seconds * 1e3);
    total += seconds;
  }
  return text + " ms";
}

// ---------------------------------------------------- background requests

void DataStore::Impl::drain_orphans() {
  // Their comm was revoked, so they complete at once (in error).
  for (auto& r : orphans) MPI_Wait(&r, MPI_STATUS_IGNORE);
  orphans.clear();
  orphan_buffers.clear();
}

void DataStore::Impl::settle_background() {
  abandon_async();
  drain_orphans();
  deferred.clear();  // never posted: nothing to wait for
  sc.deferred.clear();
  for (auto& b : background) {
    bool ok = true;
    for (auto& r : b.requests) ok = MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS && ok;
    if (ok && b.done) b.done();
  }
  background.clear();
}

void DataStore::Impl::cancel_background() {
  deferred.clear();
  sc.deferred.clear();
  // Only receives are pending (their senders never started): cancel them.
  for (auto& b : background) {
    for (auto& r : b.requests) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  background.clear();
}

void DataStore::Impl::flush() {
  drain_orphans();
  start_deferred();
  while (!background.empty()) {
    detail::Background b = std::move(background.front());
    background.erase(background.begin());
    for (std::size_t i = 0; i < b.requests.size(); ++i) {
      const int rc = MPI_Wait(&b.requests[i], MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        for (std::size_t k = i + 1; k < b.requests.size(); ++k) orphans.push_back(b.requests[k]);
        if (ulfm::is_failure(rc)) ulfm::revoke(comm.raw());
        comm.check(rc, "MPI_Wait (data store background transfer)", __FILE__, __LINE__);
      }
    }
    if (b.done) b.done();
  }
}

namespace detail {
std::array<char, kHostName> host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::array<char, detail::kHostName> out{};
  std::memcpy(out.data(), name, static_cast<std::size_t>(std::min(len, detail::kHostName - 1)));
  return out;
}
}  // namespace detail

void DataStore::Impl::ensure_topology() {
  if (topology_valid) return;
  const auto all = gather_host_names();
  set_topology(all.data(), detail::kHostName);
}

std::vector<char> DataStore::Impl::gather_host_names() {
  const auto mine = detail::host_name();
  std::vector<char> all(static_cast<std::size_t>(size()) * detail::kHostName);
  FX_CHECK_MPI(comm, MPI_Allgather(mine.data(), detail::kHostName, MPI_CHAR, all.data(), detail::kHostName,
                                   MPI_CHAR, comm.raw()));
  return all;
}

std::vector<std::string> DataStore::Impl::gather_hosts() {
  const auto all = gather_host_names();
  std::vector<std::string> hosts;
  for (int q = 0; q < size(); ++q)
    hosts.emplace_back(all.data() + static_cast<std::size_t>(q) * detail::kHostName);
  return hosts;
}

std::vector<detail::Inventory> DataStore::Impl::exchange_inventories(
    const std::vector<std::unique_ptr<Slot>>& slots, bool topology) {
  const std::size_t k = static_cast<std::size_t>(depth()) + 2;
  std::vector<detail::SlotSummary> mine;
  for (auto it = slots.rbegin(); it != slots.rend() && mine.size() < k; ++it)
    mine.push_back((*it)->summary());
  return exchange_summaries(mine, k, topology);
}

std::int64_t DataStore::Impl::newest(int n) const {
  std::int64_t it = -1;
  for (const auto& v : versions) {
    if (v->size == n) it = std::max(it, v->iteration);
  }
  return it;
}

detail::FreshFacts DataStore::Impl::fresh_facts(int n) const {
  return {newest(n) < 0 && sequence == 0, !restored_before};
}

namespace {

detail::RestorePlan fresh_plan() {
  detail::RestorePlan plan;
  plan.fresh = true;
  return plan;
}

// The newest version this rank can restore alone, or nullptr.
const Slot* newest_own(const std::vector<std::unique_ptr<Slot>>& versions, int n, int r) {
  const Slot* own = nullptr;
  for (const auto& v : versions) {
    if (v->size != n || v->iteration < 0) continue;
    if (v->own_ok && v->own_info.rank == r && (!own || v->iteration > own->iteration)) own = v.get();
  }
  return own;
}

// This rank's facts for one MPI_MIN allreduce: minima of each, of the
// negated maxima, so that each is equal everywhere when min == max.
std::array<std::int64_t, 8> restore_facts(const Slot* own, int n, int source, std::int64_t newest,
                                          const detail::FreshFacts& mine) {
  const std::int64_t it = own ? own->iteration : -1;
  const std::int64_t seq = own ? own->sequence : 0;
  const bool holds = n < 2 || (own && own->held_ok && own->held_rank == source);
  return {it, -it, -newest, seq, -seq, holds ? 1 : 0, mine.nothing ? 1 : 0, mine.not_restored ? 1 : 0};
}

// Every rank restores its own copy of iteration `it`: no transfer.
detail::RestorePlan own_copies_plan(int n, std::int64_t it, std::int64_t seq) {
  detail::RestorePlan plan;
  plan.iteration = it;
  plan.sequence = seq;
  plan.history = true;
  plan.ranks.assign(static_cast<std::size_t>(n), detail::RankPlan{});
  for (auto& rp : plan.ranks) rp.source = detail::Source::own;
  return plan;
}

}  // namespace

std::optional<detail::RestorePlan> DataStore::Impl::plan_without_exchange(const Comm& on, bool cold) {
  // The repair agreed on the facts: a fresh start costs no collective.
  if (const auto all = std::exchange(repair_facts, std::nullopt); all && detail::fresh_start(*all, cold)) {
    log::debug("restore: a fresh start, agreed by the repair (no collective)");
    return fresh_plan();
  }
  const int n = on.size();
  const int r = on.rank();
  const int source = detail::buddy_source(r, n, distance);
  // The newest version this rank can restore alone, and the newest it knows of.
  std::array<std::int64_t, 8> v =
      restore_facts(newest_own(versions, n, r), n, source, newest(n), fresh_facts(n));
  on.allreduce(v.data(), v.data(), v.size(), MPI_MIN);
  const bool same = v[0] == -v[1] && v[0] == -v[2] && v[3] == -v[4];
  if (same && v[0] >= 0 && v[5] == 1 && !parity()) return own_copies_plan(n, v[0], v[3]);
  if (detail::fresh_start({v[6] == 1, v[7] == 1}, cold)) return fresh_plan();
  return std::nullopt;
}

std::vector<detail::Inventory> DataStore::Impl::exchange_summaries(
    const std::vector<detail::SlotSummary>& list, std::size_t k, bool topology) {
  const auto n = static_cast<std::size_t>(size());
  // Per rank: its host, its sequence, its resize_from_storage, its slots.
  const std::size_t head = detail::kHostName + 2 * sizeof(std::int64_t);
  const std::size_t block = head + k * sizeof(detail::SlotSummary);
  std::vector<std::byte> mine(block), all(block * n);
  const auto host = detail::host_name();
  const std::int64_t resized = resize_from_storage ? 1 : 0;
  std::memcpy(mine.data(), host.data(), host.size());
  std::memcpy(mine.data() + detail::kHostName, &sequence, sizeof(std::int64_t));
  std::memcpy(mine.data() + detail::kHostName + sizeof(std::int64_t), &resized, sizeof(std::int64_t));
  for (std::size_t i = 0; i < k; ++i) {
    const detail::SlotSummary sum = i < list.size() ? list[i] : detail::SlotSummary{};
    std::memcpy(mine.data() + head + i * sizeof(sum), &sum, sizeof(sum));
  }
  FX_CHECK_MPI(comm, MPI_Allgather(mine.data(), static_cast<int>(block), MPI_BYTE, all.data(),
                                   static_cast<int>(block), MPI_BYTE, comm.raw()));
  std::vector<detail::Inventory> inv(n);
  for (std::size_t q = 0; q < n; ++q) {
    const std::byte* p = all.data() + q * block;
    std::int64_t their_resized = 0;
    std::memcpy(&inv[q].sequence, p + detail::kHostName, sizeof(std::int64_t));
    std::memcpy(&their_resized, p + detail::kHostName + sizeof(std::int64_t), sizeof(std::int64_t));
    inv[q].resized_from_storage = their_resized != 0;
    inv[q].slots.resize(k);
    std::memcpy(inv[q].slots.data(), p + head, k * sizeof(detail::SlotSummary));
  }
  if (topology) set_topology(reinterpret_cast<const char*>(all.data()), block);
  return inv;
}

void DataStore::Impl::set_topology(const char* names, std::size_t stride) {
  std::vector<std::string> hosts;
  for (int q = 0; q < size(); ++q) hosts.emplace_back(names + static_cast<std::size_t>(q) * stride);
  const int before = distance;
  distance = detail::choose_buddy_distance(hosts, options.memory.buddy_distance);
  ranks_here =
      static_cast<int>(std::count(hosts.begin(), hosts.end(), hosts[static_cast<std::size_t>(rank())]));
  topology_valid = true;
  const int n = size();
  if (!parity() && n > 1 && distance != before &&
      distance != (std::max(options.memory.buddy_distance, 1) - 1) % (n - 1) + 1 && rank() == 0) {
    log::info("buddy distance {} instead of {}: keeps each rank's copy on another host", distance,
              options.memory.buddy_distance);
  }
}

// ----------------------------------------------------------------- API

DataStore::DataStore(CheckpointConfig options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(options_, own_, members_, statics_)) {
  const auto& m = options_.memory;
  if (m.scheme == MemoryScheme::parity && m.parity_group < 2) {
    FX_THROW(CheckpointError,
             fmt::format("checkpoint.memory.parity_group is {}; expected 2 or more", m.parity_group));
  }
}

DataStore::~DataStore() {
  // Buffers of background transfers must outlive them.
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return;
  release_own();  // settles the background transfers first
}

void DataStore::release_own() {
  // Background transfers on it end first (its peers take part in the same
  // set_comm, or it was revoked by a failure and they end at once).
  impl_->settle_background();
  MPI_Comm c = own_.raw();
  ulfm::release(c);
  own_ = Comm();
}

const Comm& DataStore::own_comm() {
  if (own_.valid()) return own_;
  MPI_Comm c = MPI_COMM_NULL;
  FX_CHECK_MPI(comm_, MPI_Comm_dup(comm_.raw(), &c));
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  own_ = detail::CommAccess::reporting(c, detail::CommAccess::handler(comm_));
  return own_;
}

void DataStore::revoke() {
  if (own_.valid()) ulfm::revoke(own_.raw());
}

void DataStore::set_comm(Comm comm) {
  release_own();
  comm_ = std::move(comm);
  impl_->topology_valid = false;
  impl_->repair_facts.reset();  // a repair's, for the comm it made: the caller sets them after this
  if (!comm_.valid()) return;
  // Versions taken at another size (shrink policy) cannot be restored in
  // place; they move aside for restore_resized() until the next commit,
  // once no transfer touches their buffers any more. Every complete image
  // goes aside, whether or not this rank had seen its commit end: the
  // ranks' views of an asynchronous commit differ at a failure, and the
  // plan (plan_prior) must see what each holds, as restore() does. What
  // is aside already stays: a commit cut short at an intermediate size (a
  // second shrink right after a restore_resized) must not push out the
  // versions still restorable.
  const int n = comm_.size();
  const bool stale = std::any_of(impl_->versions.begin(), impl_->versions.end(),
                                 [n](const auto& v) { return v->size != n; });
  if (stale) impl_->settle_background();
  if (impl_->sc.size != n) impl_->reset_statics(n);
  impl_->stored_prior.reset();  // planned for the old comm's ranks (resize_from_storage stays)
  for (std::size_t i = 0; i < impl_->versions.size();) {
    auto& v = impl_->versions[i];
    if (v->size == n) {
      ++i;
    } else if (v->own_ok || v->held_ok || v->parity_ok) {
      impl_->prior.push_back(std::move(v));
      impl_->versions.erase(impl_->versions.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      impl_->retire(i);
    }
  }
  // Oldest first, as `versions`: the inventory sends the newest.
  std::stable_sort(impl_->prior.begin(), impl_->prior.end(), [](const auto& a, const auto& b) {
    return std::tie(a->iteration, a->sequence) < std::tie(b->iteration, b->sequence);
  });
}

void DataStore::reserve() {
  Impl& im = *impl_;
  if (!comm_.valid() || (im.options.memory.every == 0 && !im.options.memory.every_auto)) return;
  for (auto& m : members_) detail::refresh(m);  // a resizable member's extents now
  // The store's own comm is made by its next collective: the app's tells the sizes.
  im.reserve_slots(detail::layout_image(members_, 0, 0, comm_.rank(), comm_.size()).total_bytes,
                   !im.parity() && comm_.size() > 1);
}

void DataStore::add_member(Member m) {
  for (const auto& x : members_) {
    if (x.name == m.name)
      FX_THROW(UsageError, fmt::format("data store: member '{}' is registered twice", m.name));
  }
  if (m.bytes > 0 && !m.host && (!m.save || !m.load)) {
    FX_THROW(UsageError,
             fmt::format("data store: member '{}' has neither host memory nor save/load", m.name));
  }
  members_.push_back(std::move(m));
  // A device member's pinned staging buffer: allocated now, not by the
  // first commit (pinning hundreds of MiB takes a GPU job's step time).
  const Member& added = members_.back();
  if (added.to_host && added.bytes > 0) impl_->staging.buffer(members_.size() - 1, added.bytes);
}

void DataStore::add_static_member(StaticMember m) {
  for (const auto& x : statics_) {
    if (x.name == m.name)
      FX_THROW(UsageError, fmt::format("data store: static member '{}' is registered twice", m.name));
  }
  statics_.push_back(std::move(m));
  // New contents, protected at the next commit (or given back by restore()).
  impl_->sc.own = false;
  impl_->sc.publish_due = true;
}

void DataStore::clear_registrations() {
  members_.clear();
  statics_.clear();
}

std::size_t DataStore::bytes() const {
  std::size_t b = 0;
  for (const auto& m : members_) b += m.shape ? detail::current(m).bytes : m.bytes;
  return b;
}

std::optional<std::int64_t> DataStore::committed_iteration() const { return impl_->committed; }
int DataStore::buddy_distance() const {
  return impl_->topology_valid && !impl_->parity() ? impl_->distance : 0;
}
const CheckpointStats& DataStore::last_commit_stats() const { return impl_->commit_stats; }
const CheckpointStats& DataStore::last_restore_stats() const { return impl_->restore_stats; }

void DataStore::start_reprotection() { impl_->start_deferred(); }

void DataStore::wait_pending() {
  impl_->flush();
  advance_commit(true);
}

bool DataStore::progress() { return advance_commit(false); }

bool DataStore::advance_commit(bool block) {
  Impl& im = *impl_;
  if (!im.pending) return false;
  const std::int64_t it = im.pending->iteration;
  if (!im.advance_async(block, [this, it] { fault_point(StorePoint::commit_agree, it); })) return false;
  committed_async_ = std::exchange(im.committed_async, std::nullopt);
  return true;
}

void DataStore::set_snapshot(const std::string& name, Snapshot snapshot) {
  for (auto& m : members_) {
    if (m.name != name) continue;
    // The copy left to the next step would read memory a resize may free.
    if (m.shape && snapshot == Snapshot::during_next_step)
      FX_THROW(UsageError, fmt::format("data store: set_snapshot('{}', during_next_step): a resizable member "
                                       "is copied at the commit (its extents are part of the snapshot)",
                                       name));
    m.snapshot = snapshot;
    if (snapshot == Snapshot::during_next_step && m.reserve_snapshot)
      m.reserve_snapshot();  // not at a commit
    return;
  }
  FX_THROW(UsageError,
           fmt::format("data store: set_snapshot('{}'): no member of that name is registered", name));
}

void DataStore::commit(std::int64_t iteration) {
  if (!comm_.valid()) FX_THROW(UsageError, "data store: commit() before set_comm()");
  // The re-protection a restore planned, and the commit in flight (its
  // storage included): done before this one begins, its time that one's.
  wait_pending();
  fault_point(StorePoint::commit_begin, iteration);
  Impl& im = *impl_;
  im.repair_facts.reset();  // a repair's facts: no longer true
  const double t0 = now();
  const Comm& comm = own_comm();
  im.ensure_topology();
  im.drop_from(iteration);  // an abandoned future, or a repeated commit
  const std::uint64_t static_sent = im.publish_statics();
  for (auto& m : members_) detail::refresh(m);  // a resizable member's extents now

  Slot& s = im.new_slot(iteration, true);
  s.sequence = im.sequence + 1;
  s.size = comm.size();
  const bool async = im.async_due(s.sequence);
  im.staging.take_waited_seconds();  // counted from here (a sync commit's device copies)
  std::string error;
  std::vector<detail::PendingCopy> later;
  fault_point(StorePoint::commit_save, iteration);
  im.pack_own(s, async, later, error);
  if (async) {
    im.start_async(s, later, error, static_sent, t0,
                   [this, iteration](StorePoint p) { fault_point(p, iteration); });
    im.pending->stats.bytes = bytes();
    fault_point(StorePoint::commit_posted, iteration);
    auto& st = im.pending->stats;
    st.seconds = st.memory_seconds = now() - t0;
    im.commit_stats = st;
    return;
  }
  CheckpointStats st;
  const detail::KeepContext keep{st, [this, iteration](StorePoint p) { fault_point(p, iteration); }};
  im.commit_in_memory(s, keep, error);
  st.device_seconds = im.staging.take_waited_seconds();
  st.level = CheckpointLevel::memory;
  st.iteration = iteration;
  st.bytes = bytes();
  st.static_bytes_sent = static_sent;
  st.memory_seconds = now() - t0;
  im.keep_below(s, keep);
  st.seconds = st.committed_seconds = now() - t0;
  im.commit_stats = st;
  log::debug("committed iteration {} ({}): {} bytes in {:.3f} ms", iteration, to_string(st.level), st.bytes,
             st.seconds * 1e3);
}

void DataStore::Impl::commit_in_memory(Slot& s, const detail::KeepContext& keep, const std::string& error) {
  const bool others_ok = memory().publish(s, keep, "");
  keep.fault(StorePoint::commit_agree);
  if (!agree(s.own_ok && others_ok ? 1 : 0)) fail_commit(s.iteration, error);
  mark_committed(s);
}

void DataStore::Impl::fail_commit(std::int64_t iteration, const std::string& error) {
  drop_from(iteration);
  FX_THROW(CheckpointError,
           error.empty()
               ? fmt::format("checkpoint of iteration {} failed on another rank (see its log)", iteration)
               : error);
}

void DataStore::Impl::mark_committed(Slot& s) {
  s.committed = true;
  prior.clear();                // the new decomposition is protected now
  resize_from_storage = false;  // and this version supersedes the stored one
  committed = s.iteration;
  sequence = s.sequence;
  trim();
}

// A member that cannot be saved must not leave the other ranks waiting:
// the failure travels with the exchange and the agreement.
void DataStore::Impl::pack_own(Slot& s, bool async, std::vector<detail::PendingCopy>& later,
                               std::string& error) {
  try {
    s.own_info = detail::layout_image(members, s.iteration, s.sequence, rank(), size());
    s.own.reset(s.own_info.total_bytes, image_memory());
    later = detail::pack_image_now(members, s.own_info, s.own.data(), async, &staging, s.own.pinned());
    s.own_ok = !async;
  } catch (const Error& e) {
    error = e.what();
    log::error("checkpoint of iteration {}: {}", s.iteration, e.what());
  }
}

// A fresh start: nothing stored belongs to it (node-local versions above
// iteration 0 would meet its later commits of the same iteration).
void DataStore::Impl::start_over() {
  settle_background();  // a restore's re-protection, planned only
  for (const auto& l : levels) l->set_aside_above(-1);
  committed.reset();
  sequence = 0;
  sc.publish_due = true;  // the app fills them again
}

std::optional<std::int64_t> DataStore::restore() {
  if (!comm_.valid()) FX_THROW(UsageError, "data store: restore() before set_comm()");
  Impl& im = *impl_;
  const double t0 = now();
  im.settle_background();
  im.stored_prior.reset();
  im.staging.take_waited_seconds();  // counted from here

  // Everyone's inventory (and host, for the buddy placement), so that every
  // rank computes the same plan, whatever it knew before; skipped when no
  // rank lost anything (the topology then waits for the next commit). The
  // check is a reduction on the app's communicator (no point-to-point
  // message to mix with the app's), so a fresh start needs no communicator
  // of the store's own: the next commit makes it.
  const auto plan = [&] {
    // Storage is read at a fresh start only with a level that writes it (as
    // the runtime decides at the job's start).
    if (auto quick = im.plan_without_exchange(comm_, !(options_.hdf5.restart && im.storage_on())))
      return std::move(*quick);
    own_comm();
    const auto inv = im.exchange_inventories(im.versions, true);
    return detail::plan_restore(inv, im.distance, im.parity(), options_.memory.parity_group);
  }();
  im.resize_from_storage = false;  // the inventories carried it; found again below if still due
  if (!plan.fresh) own_comm();
  // "arrival": its first collective (waiting for every rank) and the plan.
  im.restore_steps = {{"arrival", now() - t0}};

  CheckpointStats st;
  st.bytes = bytes();
  const detail::RestoreFacts facts{plan, t0, options_.hdf5.restart,
                                   [this](StorePoint p) { fault_point(p, -1); }};
  return im.restore_from_levels(facts, st);
}

}  // namespace fx
