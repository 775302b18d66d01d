#pragma once
// An asynchronous commit in flight. DataStore::commit() takes the
// snapshot (or leaves the during_next_step members to a copier thread
// beside the app's next step) and posts the size exchange; progress() and
// flush() move it on: the image exchange with the buddies (or the parity
// ring), then the agreement that commits the version. Until then the previous version
// stays the one a restore falls back to.
#include <fx/data_store/store.hpp>
#include <fx/recovery/ulfm.hpp>

#include <mpi.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "image.hpp"
#include "parity_ring.hpp"

namespace fx::detail {

struct Slot;

// Copies and hashes members into an image on a thread of its own (no MPI
// there), then writes the image's header. The host members first, after
// which the app may write its members again (released: device members
// were copied into device snapshots of the store's before the commit
// returned); then, once the snapshots' copies have landed in pinned
// memory, their bytes go into the image, beside the app's next steps.
class SnapshotCopier {
 public:
  SnapshotCopier() = default;
  SnapshotCopier(const SnapshotCopier&) = delete;
  SnapshotCopier& operator=(const SnapshotCopier&) = delete;
  ~SnapshotCopier() { wait(); }
  void start(std::vector<PendingCopy> copies, ImageInfo& info, std::byte* image, DeviceStaging* staging);
  void wait_released();                    // until the app's members are free (at once when idle)
  bool finished() const { return done_; }  // the image is complete (or nothing started)
  void wait();                             // until done (at once when idle)

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool released_ = true;
  std::atomic<bool> done_{true};
};

// An asynchronous commit's storage writes (Level::write: files, no MPI
// call) on a thread of their own, beside the app's steps.
class StorageWriter {
 public:
  StorageWriter() = default;
  StorageWriter(const StorageWriter&) = delete;
  StorageWriter& operator=(const StorageWriter&) = delete;
  ~StorageWriter() { wait(); }
  void start(std::function<void()> work);
  bool started() const { return started_; }
  bool finished() const { return done_; }
  void wait();  // until done (at once when idle)

 private:
  std::thread thread_;
  bool started_ = false;
  std::atomic<bool> done_{false};
};

// Moves a transfer on, on a thread of its own beside the app's steps
// (MPI_THREAD_MULTIPLE): else Open MPI moves a large message on only
// inside the app's MPI calls, whose time its copy then takes. `poll`
// tests the transfer's requests (a parity ring also XORs and posts its
// next step) and says when it is done; the thread calls it until then, an
// error or stop(). The requests are the thread's until finish() or stop().
class TransferThread {
 public:
  TransferThread() = default;
  TransferThread(const TransferThread&) = delete;
  TransferThread& operator=(const TransferThread&) = delete;
  ~TransferThread() { stop(); }  // requests still posted are left to MPI_Finalize
  void start(std::function<int(bool& done)> poll);
  bool running() const { return thread_.joinable(); }
  bool finished() const { return done_; }  // done, or an error
  // Joined (stop: at once, leaving the rest posted); the first error's
  // code, else MPI_SUCCESS.
  int finish();
  int stop();

 private:
  std::thread thread_;
  int rc_ = MPI_SUCCESS;
  std::atomic<bool> done_{false};
  std::atomic<bool> stop_{false};
};

struct AsyncCommit {
  Slot* slot = nullptr;
  std::int64_t iteration = -1;
  bool packed = false;  // this rank's members were saved (else `error` says why)
  std::string error;
  double t0 = 0;          // when commit() was called
  CheckpointStats stats;  // background_seconds: the app's time on it since
  SnapshotCopier copier;
  std::vector<PendingCopy> later;  // no idle core: copied on the app's thread at the step end
  bool snapshot_done = false;
  int dest = -1, src = -1;                   // buddy holding my copy, rank whose copy I hold
  std::array<std::uint64_t, 2> out{}, in{};  // image bytes (0: none) and payload offset
  std::vector<MPI_Request> sizes;
  bool sizes_done = false;
  bool image_posted = false;
  std::vector<MPI_Request> image;  // the receive's and the send's pieces (with `mover` while it runs)
  // Parity: the group's image sizes (this rank's too), then the ring over
  // the padded images instead of the buddy exchange.
  bool parity = false;
  std::vector<std::uint64_t> group_sizes;
  ParityStripe stripe;
  ParityRing ring;
  bool threaded = false;  // the exchange moves on `mover` (checkpoint.memory.progress)
  TransferThread mover;
  bool exchanged = false;
  bool failed = false;  // a transfer ended in error: its requests went to the orphans, nothing held
  ulfm::PendingAgreement agreement;
  // A storage level due: once the exchange is in (a node-local partner
  // copy is the buddy's image), the levels' writes on `writer`, then (the
  // app's thread) their messages; the agreement ANDs every rank's writes
  // beside the version (kWrote), and the levels conclude after it.
  bool storage = false;
  bool reports_posted = false;
  std::vector<MPI_Request> reports;
  bool stored = false;
  bool dropped = false;  // abandoned: messages posted for their peers' sake, no files written
  StorageWriter writer;
  std::vector<std::string> write_errors;
  std::function<void(StorePoint)> fault;  // the commit's fault point
};

}  // namespace fx::detail
