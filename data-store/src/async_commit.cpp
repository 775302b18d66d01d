// Asynchronous buddy commits: see async_commit.hpp.
#include "async_commit.hpp"

#include <fx/clock.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/log.hpp>
#include <fx/recovery/comm_access.hpp>

#include <fmt/format.h>
#include <sched.h>

#include "checksum.hpp"
#include "store_impl.hpp"

namespace fx {

using detail::Slot;

namespace detail {

void SnapshotCopier::start(std::vector<PendingCopy> copies, ImageInfo& info, std::byte* image,
                           DeviceStaging* staging) {
  wait();
  released_ = false;
  done_ = false;
  thread_ = std::thread([this, copies = std::move(copies), &info, image, staging] {
    std::vector<PendingCopy> host, staged;
    for (const auto& c : copies) (c.staged ? staged : host).push_back(c);
    // Beside the app's step (which may rewrite ghost layers): hash the copy.
    for (const auto& c : host) *c.hash = copy_then_hash(c.dst, c.src, c.bytes);
    {
      // Device members were copied into snapshots of the store's before
      // the commit returned: only the host members held the app back.
      const std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    cv_.notify_all();
    if (!staged.empty()) staging->fence();           // the snapshots' copies to the host have landed
    for (const auto& c : staged) *c.hash = land(c);  // the store's own bytes
    write_header(info, image);
    done_ = true;
  });
}

void SnapshotCopier::wait_released() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return released_; });
}

void SnapshotCopier::wait() {
  if (thread_.joinable()) thread_.join();
}

void StorageWriter::start(std::function<void()> work) {
  started_ = true;
  thread_ = std::thread([this, w = std::move(work)] {
    w();
    done_ = true;
  });
}

void StorageWriter::wait() {
  if (thread_.joinable()) thread_.join();
}

void TransferThread::start(std::function<int(bool& done)> poll) {
  rc_ = MPI_SUCCESS;
  done_ = false;
  stop_ = false;
  thread_ = std::thread([this, poll = std::move(poll)] {
    bool done = false;
    while (!done && !stop_) {
      rc_ = poll(done);
      if (rc_ != MPI_SUCCESS) break;
      if (!done) sched_yield();  // the core is idle, or shared with a peer we wait for
    }
    done_ = true;
  });
}

int TransferThread::finish() {
  if (!thread_.joinable()) return MPI_SUCCESS;
  thread_.join();
  return rc_;
}

int TransferThread::stop() {
  stop_ = true;
  return finish();
}

StoreAccess::Exchange StoreAccess::exchange(const DataStore& store) {
  const AsyncCommit* a = store.impl_->pending.get();
  if (a == nullptr || !a->image_posted) return Exchange::not_posted;
  if (!a->threaded) return Exchange::in_app_calls;
  return a->exchanged || a->mover.finished() ? Exchange::done_on_thread : Exchange::on_thread;
}

}  // namespace detail

bool DataStore::Impl::exchange_thread() {
  const bool multiple = ulfm::thread_multiple();
  switch (options.memory.progress) {
    case ExchangeProgress::app:
      return false;
    case ExchangeProgress::thread:
      if (!multiple && !warned_progress && rank() == 0)
        log::warn(
            "checkpoint.memory.progress: thread needs MPI_THREAD_MULTIPLE, which this MPI library "
            "does not give: the app's calls move the buddy exchange on");
      warned_progress = true;
      return multiple;
    case ExchangeProgress::automatic:
      break;
  }
  return multiple && idle_core();
}

bool DataStore::Impl::copier_thread() const {
  switch (options.memory.copier) {
    case SnapshotCopier::thread:
      return true;
    case SnapshotCopier::step_end:
      return false;
    case SnapshotCopier::automatic:
      break;
  }
  return idle_core();
}

// A core beyond one per rank on this host: a thread of the store's runs
// there without taking the app's.
bool DataStore::Impl::idle_core() const {
  return static_cast<int>(std::thread::hardware_concurrency()) > ranks_here;
}

bool DataStore::Impl::async_due(std::int64_t seq) const {
  if (!options.memory.async) return false;
  for (const auto& l : levels)
    if (l->due(seq) && l->write_exchanges()) return false;
  return true;
}

void DataStore::Impl::start_async(detail::Slot& s, std::vector<detail::PendingCopy>& later,
                                  const std::string& error, std::uint64_t static_sent, double t0,
                                  std::function<void(StorePoint)> fault) {
  auto a = std::make_unique<detail::AsyncCommit>();
  a->storage = storage_due(s.sequence);
  a->fault = std::move(fault);
  a->slot = &s;
  a->iteration = s.iteration;
  a->packed = error.empty();
  a->error = error;
  a->t0 = t0;
  a->stats.level = deepest_due(s.sequence);  // where the version is going
  a->stats.iteration = s.iteration;
  a->stats.static_bytes_sent = static_sent;
  a->stats.async = true;
  a->threaded = !alone() && exchange_thread();
  a->stats.progress_thread = a->threaded;
  if (!later.empty() && copier_thread())
    a->copier.start(std::move(later), s.own_info, s.own.data(), &staging);
  else
    a->later = std::move(later);
  pending = std::move(a);
  post_async();
}

void DataStore::Impl::post_async() {
  detail::AsyncCommit& a = *pending;
  if (alone()) {  // no buddy: the snapshot, then the agreement
    a.sizes_done = a.image_posted = true;
    return;
  }
  const int n = size();
  a.out = {a.packed ? a.slot->own_info.total_bytes : 0, a.slot->own_info.payload_offset};
  a.slot->held_ok = false;
  a.parity = parity();
  if (a.parity) return post_group_sizes();
  a.dest = detail::buddy_of(rank(), n, distance);
  a.src = detail::buddy_source(rank(), n, distance);
  a.sizes.assign(2, MPI_REQUEST_NULL);
  FX_CHECK_MPI(comm,
               MPI_Irecv(a.in.data(), 2, MPI_UINT64_T, a.src, detail::kTagSize, comm.raw(), &a.sizes[0]));
  FX_CHECK_MPI(comm,
               MPI_Isend(a.out.data(), 2, MPI_UINT64_T, a.dest, detail::kTagSize, comm.raw(), &a.sizes[1]));
}

// Parity: this rank's image size to every other member of its group, and
// theirs from them.
void DataStore::Impl::post_group_sizes() {
  detail::AsyncCommit& a = *pending;
  const detail::ParityGroup g = detail::parity_group(rank(), size(), options.memory.parity_group);
  a.group_sizes.assign(static_cast<std::size_t>(g.count), 0);
  a.group_sizes[static_cast<std::size_t>(rank() - g.first)] = a.out[0];
  for (int q = g.first; q < g.first + g.count; ++q) {
    if (q == rank()) continue;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    FX_CHECK_MPI(comm, MPI_Irecv(&a.group_sizes[static_cast<std::size_t>(q - g.first)], 1, MPI_UINT64_T, q,
                                 detail::kTagSize, comm.raw(), &r[0]));
    FX_CHECK_MPI(comm, MPI_Isend(&a.out[0], 1, MPI_UINT64_T, q, detail::kTagSize, comm.raw(), &r[1]));
    a.sizes.insert(a.sizes.end(), r, r + 2);
  }
}

namespace {

// The commit's agreement, bit by bit (MPIX_Comm_iagree ANDs them): every
// rank kept its image and its buddy's copy; then one bit per storage level
// due, in order: every rank wrote its files there.
constexpr int kKept = 1;
constexpr int kWroteShift = 1;

}  // namespace

// After an error `rc` on one of `rs`: the others become orphans and the
// comm is revoked (the caller's check throws). Returns rc.
int DataStore::Impl::orphan_on_error(std::vector<MPI_Request>& rs, int rc) {
  if (rc == MPI_SUCCESS) return rc;
  for (auto& r : rs) {
    if (r != MPI_REQUEST_NULL) orphans.push_back(r);
    r = MPI_REQUEST_NULL;
  }
  if (ulfm::is_failure(rc)) ulfm::revoke(comm.raw());
  return rc;
}

int DataStore::Impl::complete(std::vector<MPI_Request>& rs, bool block, bool& done) {
  return orphan_on_error(rs, detail::test_all(rs, block, done));
}

void DataStore::Impl::release_snapshot() {
  detail::AsyncCommit& a = *pending;
  Slot& s = *a.slot;
  a.copier.wait_released();
  if (!a.later.empty())
    finish_pending_copies(std::exchange(a.later, {}), s.own_info, s.own.data(), false, &staging);
}

void DataStore::Impl::finish_snapshot() {
  detail::AsyncCommit& a = *pending;
  release_snapshot();
  a.copier.wait();
  if (!a.snapshot_done) a.slot->own_ok = a.packed;
  a.snapshot_done = true;
}

// The storage levels' writes on the writer thread (none when this rank
// has no image: the agreement fails the version), then their messages,
// posted on every rank alike; false until those are complete.
bool DataStore::Impl::advance_storage(bool block) {
  detail::AsyncCommit& a = *pending;
  if (!a.storage || a.stored) return true;
  Slot& s = *a.slot;
  if (!a.writer.started() && s.own_ok && !a.dropped)
    a.writer.start([this, &a, &s] { a.write_errors = write_below(s, a.stats); });
  if (!block && a.writer.started() && !a.writer.finished()) return false;
  a.writer.wait();
  if (!a.reports_posted) {
    detail::Transfer x(comm, orphans);
    post_below(s, {a.stats, a.fault}, x);
    a.reports = x.release();
    a.reports_posted = true;
  }
  bool done = false;
  const int rc = complete(a.reports, block, done);
  a.failed = a.failed || rc != MPI_SUCCESS;
  comm.check(rc, "MPI_Test (checkpoint reports)", __FILE__, __LINE__);
  a.stored = done;
  return done;
}

bool DataStore::Impl::advance_exchange(bool block) {
  detail::AsyncCommit& a = *pending;
  // The app's members are released with its next step, whatever the
  // exchange does; device members' bytes may still be on their way into
  // the image then (the exchange waits for them).
  release_snapshot();
  if (!block && !a.copier.finished()) return false;
  finish_snapshot();
  if (!a.sizes_done) {
    const int rc = complete(a.sizes, block, a.sizes_done);
    a.failed = a.failed || rc != MPI_SUCCESS;
    comm.check(rc, "MPI_Test (checkpoint sizes)", __FILE__, __LINE__);
  }
  if (a.sizes_done && !a.image_posted) a.parity ? post_ring() : post_image();
  if (a.image_posted && !a.exchanged) advance_image(block);
  return a.exchanged && advance_storage(block);
}

// The image exchange, posted once both sizes are in; on the exchange
// thread when the commit has one.
void DataStore::Impl::post_image() {
  detail::AsyncCommit& a = *pending;
  Slot& s = *a.slot;
  detail::Transfer x(comm, orphans);
  if (a.in[0] > 0) s.held.reset(a.in[0]);
  x.exchange(s.own.data(), a.out[0], a.dest, s.held.data(), a.in[0], a.src, detail::kTagImage);
  a.image = x.release();
  a.image_posted = true;
  if (a.threaded) a.mover.start([rs = &a.image](bool& done) { return detail::test_all(*rs, false, done); });
}

// Parity: once the group's sizes are in, the ring's first step (none
// when some member has no image: the agreement fails the version).
void DataStore::Impl::post_ring() {
  detail::AsyncCommit& a = *pending;
  a.image_posted = true;
  a.stripe = detail::parity_stripe(a.group_sizes);
  if (a.stripe.stripe == 0) {
    a.exchanged = true;
    return;
  }
  const detail::ParityGroup g = detail::parity_group(rank(), size(), options.memory.parity_group);
  const int rc = a.ring.start(comm.raw(), g, rank(), a.stripe.chunk, parity_buffers(*a.slot, a.stripe));
  a.failed = a.failed || orphan_on_error(a.ring.requests(), rc) != MPI_SUCCESS;
  comm.check(rc, "MPI_Isend (parity ring)", __FILE__, __LINE__);
  if (a.threaded) a.mover.start([r = &a.ring](bool& done) { return r->advance(false, done); });
}

// Tests (or waits for) the exchange, or takes it back from the exchange
// thread once that finished; the buddy's copy (or the parity block) is
// held then.
void DataStore::Impl::advance_image(bool block) {
  detail::AsyncCommit& a = *pending;
  if (a.mover.running() && !block && !a.mover.finished()) return;
  std::vector<MPI_Request>& rs = a.parity ? a.ring.requests() : a.image;
  bool done = false;
  int rc = MPI_SUCCESS;
  if (a.mover.running()) {
    rc = a.mover.finish();
    done = rc == MPI_SUCCESS;
  } else {
    rc = a.parity ? a.ring.advance(block, done) : detail::test_all(rs, block, done);
  }
  a.failed = a.failed || orphan_on_error(rs, rc) != MPI_SUCCESS;
  comm.check(rc, a.parity ? "MPI_Test (parity ring)" : "MPI_Test (checkpoint image)", __FILE__, __LINE__);
  if (done && a.parity) keep_parity(*a.slot, a.stripe);
  if (done && !a.parity && a.in[0] > 0) a.slot->hold(a.src, a.in[1]);
  a.exchanged = done;
}

bool DataStore::Impl::advance_async(bool block, const std::function<void()>& at_agree) {
  if (!pending) return false;
  detail::AsyncCommit& a = *pending;
  const double t = now();
  if (advance_exchange(block) && !a.agreement.posted()) {
    at_agree();
    const bool kept = size() == 1 || (a.parity ? a.slot->parity_ok : a.in[0] > 0);
    int flag = a.slot->own_ok && kept ? kKept : 0;
    for (std::size_t i = 0; i < a.write_errors.size(); ++i)
      if (a.write_errors[i].empty()) flag |= 1 << (kWroteShift + static_cast<int>(i));
    a.agreement.post(comm.raw(), flag);
  }
  const bool agreed = a.agreement.posted() && wait_agreement(block);
  a.stats.background_seconds += now() - t;
  if (agreed) conclude_async();
  return agreed;
}

bool DataStore::Impl::wait_agreement(bool block) {
  detail::AsyncCommit& a = *pending;
  bool agreed = a.agreement.test();
  detail::FailureHandler* h = detail::CommAccess::handler(comm);
  while (block && !agreed) {
    // A revoke does not end an agreement: leave when a repair started.
    if (h && h->interrupted()) {
      a.agreement.abandon();
      h->on_failure(comm.raw(), MPI_ERR_OTHER, "MPIX_Comm_iagree");
      throw ProcessFailure("agreement left: a repair started elsewhere", {}, __FILE__, __LINE__);
    }
    sched_yield();  // oversubscribed: let the peers we wait for run
    agreed = a.agreement.test();
  }
  return agreed;
}

void DataStore::Impl::conclude_async() {
  detail::AsyncCommit& a = *pending;
  Slot& s = *a.slot;
  const ulfm::Agreement r = a.agreement.result();
  if (r.rc != MPI_SUCCESS) comm.check(r.rc, "MPIX_Comm_iagree (checkpoint commit)", __FILE__, __LINE__);
  // Everything still needed of `a`, before `pending` frees it (t0 was read
  // after the reset: ASan's heap-use-after-free in every async commit).
  const std::int64_t it = a.iteration;
  const std::string error = a.error;
  const double t0 = a.t0;
  const bool storage = a.storage;
  const std::vector<std::string> write_errors = a.write_errors;
  CheckpointStats st = a.stats;
  pending.reset();
  if ((r.flag & kKept) == 0) fail_commit(it, error);
  mark_committed(s);
  // A level some rank could not write to throws as in a synchronous commit
  // (the levels before it kept the version, which stays committed).
  const double t = now();
  if (storage) conclude_below(s, st, r.flag >> kWroteShift, write_errors);
  st.background_seconds += now() - t;  // markers, manifest, retention: on the app's thread
  st.committed_seconds = now() - t0;
  commit_stats = st;
  committed_async = st;
  log::debug(
      "committed iteration {} after {:.3f} ms: the app waited {:.3f} ms in the commit, {:.3f} ms after{}", it,
      st.committed_seconds * 1e3, st.seconds * 1e3, st.background_seconds * 1e3,
      st.progress_thread ? " (the exchange on the store's thread)" : "");
}

void DataStore::Impl::abandon_async() {
  if (!pending) return;
  detail::AsyncCommit& a = *pending;
  finish_snapshot();
  a.writer.wait();  // its files stay without their manifest or marker: never read
  if (a.failed) {
    // nothing of the exchange is held
  } else if (!ulfm::comm_revoked(comm.raw())) {
    // No failure (the comm goes, every peer does the same): finish the
    // exchange as usual, so no peer's transfer is left unmatched; storage
    // messages too, but no files are written for them.
    a.dropped = true;
    a.fault = [](StorePoint) {};
    try {
      advance_exchange(true);
    } catch (const Error&) {
      // a failure after all: the comm is revoked now, the version incomplete
    }
  } else {
    end_revoked();
  }
  if (a.agreement.posted() && !a.agreement.test()) a.agreement.abandon();
  pending.reset();
}

// A failure: whatever was posted ends at once. Errors mean "not held".
// Requests an earlier error handed to the orphans look complete here.
void DataStore::Impl::end_revoked() {
  detail::AsyncCommit& a = *pending;
  std::vector<MPI_Request>& rs = a.parity ? a.ring.requests() : a.image;
  if (a.mover.running() && orphan_on_error(rs, a.mover.stop()) != MPI_SUCCESS) a.failed = true;
  bool ok = !a.failed && a.sizes_done && a.image_posted;
  for (auto& r : a.sizes) MPI_Wait(&r, MPI_STATUS_IGNORE);
  for (auto& r : rs) ok = MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS && ok;
  // A ring cut short leaves no parity block; a buddy's image that came in whole is held.
  if (ok && !a.exchanged && !a.parity && a.in[0] > 0) a.slot->hold(a.src, a.in[1]);
  for (auto& r : a.reports) MPI_Wait(&r, MPI_STATUS_IGNORE);
}

}  // namespace fx
