#pragma once
// The store's core, shared by store.cpp (API, commit, restore's plan),
// levels.cpp (the list of levels and the walks over them), redundancy.cpp
// (buddy and parity exchanges), async_commit.cpp, resize.cpp, statics.cpp
// and level_context.cpp. The levels never include it: they see the core
// through detail::LevelContext (level_context.hpp).
#include <fx/data_store/store.hpp>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "async_commit.hpp"
#include "buffer.hpp"
#include "device_staging.hpp"
#include "image.hpp"
#include "level.hpp"
#include "manifest.hpp"
#include "node_files.hpp"
#include "parity_ring.hpp"
#include "plan.hpp"
#include "resize_plan.hpp"
#include "slot.hpp"
#include "statics.hpp"

namespace fx::detail {

struct PriorImage;  // resize.cpp

// Requests left running by restore(): buddy copies for recovered ranks.
struct Background {
  std::vector<MPI_Request> requests;
  std::function<void()> done;  // runs once all completed successfully
};

// restore()'s fresh rule, on these facts of every rank ANDed (by
// plan_without_exchange's reduction, or by a repair's agreement:
// StoreAccess): nothing was ever committed anywhere, and storage holds
// nothing for this job either (`cold`: a fresh start reads none; or a live
// rank has returned from restore() before, so the job's start read it and
// no commit wrote it since).
struct FreshFacts {
  bool nothing = true;       // no version of the comm's size, sequence 0
  bool not_restored = true;  // no restore() returned here
};
inline bool fresh_start(const FreshFacts& all, bool cold) {
  return all.nothing && (cold || !all.not_restored);
}

// A transfer a restore planned, posted once the app has resumed.
struct Deferred {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
  int peer = -1;
  int tag = 0;
  bool send = false;
  std::function<void()> done;  // after it completed successfully
};

}  // namespace fx::detail

namespace fx {

struct DataStore::Impl {
  Impl(const CheckpointConfig& o, const Comm& c, std::vector<Member>& m, const std::vector<StaticMember>& st)
      : options(o), comm(c), members(m), statics(st), levels(make_levels(detail::standard_levels())) {}

  const CheckpointConfig& options;
  const Comm& comm;
  std::vector<Member>& members;  // a restore fits resizable ones to the version's extents
  const std::vector<StaticMember>& statics;
  detail::StaticCopies sc;

  // The checkpoint levels, fastest first (levels.cpp): memory, then those
  // beneath it, each behind detail::Level, reaching this core only through
  // `context`.
  detail::LevelContext context{*this};
  detail::Levels levels;
  detail::Levels make_levels(const std::vector<detail::LevelMaker>& makers);
  detail::Level& memory();
  bool storage_due(std::int64_t sequence) const;             // a level below memory keeps this commit
  bool storage_on() const;                                   // a level below memory is on
  CheckpointLevel deepest_due(std::int64_t sequence) const;  // the last level keeping it (memory: none below)
  // A committed version to every level below memory that is due; each
  // one's time into `c.stats`, its level the last one's. In parts for an
  // asynchronous commit (none blocks on a peer): the writes (no MPI; the
  // writer thread), their messages, then, after the commit's agreement
  // (`wrote`: bit i, every rank wrote the i-th level due), the rest with
  // the errors they gave.
  void keep_below(detail::Slot& s, const detail::KeepContext& c);
  std::vector<std::string> write_below(const detail::Slot& s, CheckpointStats& st);
  void post_below(const detail::Slot& s, const detail::KeepContext& c, detail::Transfer& t);
  void conclude_below(detail::Slot& s, CheckpointStats& st, int wrote,
                      const std::vector<std::string>& errors);
  static std::string write_one(detail::Level& l, const detail::Slot& s, CheckpointStats& st);
  static void publish_one(detail::Level& l, detail::Slot& s, const detail::KeepContext& c,
                          const std::string& error);
  std::string below_memory() const;  // "trying node-local storage and HDF5"
  // restore() from its plan: the walk over the levels, then (nothing
  // restored) a version of another size, or a fresh start. Fills `st`.
  std::optional<std::int64_t> restore_from_levels(const detail::RestoreFacts& f, CheckpointStats& st);
  std::optional<std::pair<CheckpointLevel, std::int64_t>> walk(const detail::RestoreFacts& f,
                                                               CheckpointStats& st);
  // Device members' pinned buffers and copy stream; before `pending`, whose
  // copier may still wait on it while it is destroyed.
  detail::DeviceStaging staging;

  std::vector<std::unique_ptr<detail::Slot>> versions;  // oldest first
  std::vector<std::unique_ptr<detail::Slot>> pool;      // retired; buffers reused
  std::vector<std::unique_ptr<detail::Slot>> prior;     // versions of sizes before a shrink (resize.cpp)
  std::optional<std::int64_t> committed;
  std::int64_t sequence = 0;  // of the newest committed / restored version
  bool topology_valid = false;
  int distance = 0;
  int ranks_here = 1;  // ranks of the comm on this host (set with the topology)
  // The snapshot copier runs on a thread of its own (checkpoint.memory.copier;
  // auto: when a core of this host is idle), else on the app's thread at
  // the step end.
  bool copier_thread() const;
  // The buddy exchange moves on a thread of the store's (checkpoint.memory.
  // progress; auto: MPI_THREAD_MULTIPLE and a core of this host idle), else
  // in the app's calls.
  bool exchange_thread();
  bool idle_core() const;  // more cores on this host than its ranks
  bool warned_progress = false;
  std::vector<MPI_Request> orphans;
  // Buffers of orphaned requests: freed only once drain_orphans() has
  // completed those requests (MPI may still read or write them until then).
  std::vector<detail::Buffer> orphan_buffers;
  std::vector<detail::Background> background;
  std::vector<detail::Deferred> deferred;  // planned by a restore, posted after the app resumed
  CheckpointStats commit_stats, restore_stats;
  detail::Buffer scratch_a, scratch_b;
  bool warned_alone = false;

  int rank() const { return comm.rank(); }
  int size() const { return comm.size(); }
  bool parity() const { return options.memory.scheme == MemoryScheme::parity; }
  int depth() const { return std::max(options.memory.depth, 1); }

  // Versions
  // A synchronous commit's memory part: the redundancy, the agreement that
  // commits `s` (CheckpointError naming `error` or another rank when it
  // fails), then mark_committed(): `s` is the newest committed version.
  void commit_in_memory(detail::Slot& s, const detail::KeepContext& keep, const std::string& error);
  void mark_committed(detail::Slot& s);
  // A commit that failed on some rank: version `iteration` goes, and
  // CheckpointError says why (`error`, or another rank's log).
  [[noreturn]] void fail_commit(std::int64_t iteration, const std::string& error);
  // This rank's image of `s` (all but the copies `later`, when `async`);
  // `error` says why it could not be.
  void pack_own(detail::Slot& s, bool async, std::vector<detail::PendingCopy>& later, std::string& error);
  detail::Slot& new_slot(std::int64_t iteration, bool recycle);
  void retire(std::size_t index);
  void drop_from(std::int64_t iteration);  // versions >= iteration
  void drop_above(std::int64_t iteration);
  void trim();
  detail::Slot* find(std::int64_t iteration);
  detail::Slot& slot_for(std::int64_t iteration, int size);  // existing, or new without recycling
  std::unique_ptr<detail::Slot> spare_slot();                // from the pool, outside `versions`
  // The slots the versions to come take (each commit's own image, and the
  // buddy's copy when it `holds` one), allocated and touched now for images
  // of `bytes`: the first commits find them in the pool.
  void reserve_slots(std::size_t bytes, bool holds);
  // Pinned memory for the own images when a member lives on the device:
  // its copies land in the image, with no staging copy (issue 43, item 1).
  detail::Memory image_memory() const;

  // MPIX_Comm_agree on the app comm (bitwise AND); throws ProcessFailure.
  int agree(int flag);

  // Background and abandoned requests
  void drain_orphans();
  void keep_until_drained(std::vector<detail::Buffer>& buffers) {
    for (auto& b : buffers) orphan_buffers.push_back(std::move(b));
  }
  void keep_until_drained(std::map<int, detail::Buffer>& buffers) {
    for (auto& kv : buffers) orphan_buffers.push_back(std::move(kv.second));
  }
  void settle_background();  // tolerant: failures mean "not done"
  void flush();              // strict: failures throw
  void cancel_background();  // receives posted for a restore that was called off

  // Asynchronous commits (async_commit.cpp)
  std::unique_ptr<detail::AsyncCommit> pending;    // the commit in flight
  std::optional<CheckpointStats> committed_async;  // handed out by DataStore::take_committed()
  // Commit number `seq` runs in the background (checkpoint.memory.async),
  // unless a level due exchanges images in its write (Level::write_exchanges).
  bool async_due(std::int64_t seq) const;
  // `pending` for `s`, packed but for the copies `later` (the copier's or
  // the step end's), its exchange posted.
  void start_async(detail::Slot& s, std::vector<detail::PendingCopy>& later, const std::string& error,
                   std::uint64_t static_sent, double t0, std::function<void(StorePoint)> fault);
  // Post `pending`'s size exchange (its snapshot taken or on the copier).
  void post_async();
  void post_group_sizes();  // parity: with every other member of the group
  // The app's next step has ended: the members it may write again are
  // copied (host) or landed in pinned memory (device).
  void release_snapshot();
  void finish_snapshot();  // the copier joined, the step-end copies made, own_ok set
  // Its snapshot and exchange; true once exchanged (strict, as below).
  bool advance_exchange(bool block);
  void post_image();               // once both sizes are in (to the exchange thread, if any)
  void post_ring();                // parity: once the group's sizes are in (likewise)
  void advance_image(bool block);  // `exchanged` once complete, the buddy's copy (parity block) held
  // The storage levels due: their writes (writer thread), then their
  // messages; true once those are complete.
  bool advance_storage(bool block);
  // Move `pending` on without waiting for peers (`block`: until it is
  // committed). `at_agree` runs before the agreement is posted. Strict:
  // failures throw (ProcessFailure; CheckpointError when some rank could
  // not save). True when this call committed the version.
  bool advance_async(bool block, const std::function<void()>& at_agree);
  bool wait_agreement(bool block);  // the agreement posted: whether it is in (`block`: until it is)
  void conclude_async();            // it is in: the version committed (or CheckpointError)
  // A restore, or the comm going: finish what does not need the peers'
  // cooperation and keep the version only as complete as it got (the
  // restore plan decides); an agreement in flight is left behind.
  void abandon_async();
  void end_revoked();  // abandon_async() on a revoked comm: every posted transfer ends at once

  // Topology: commit() gathers the hosts when set_comm() made them unknown,
  // restore() does with the inventories (unless plan_without_exchange
  // skips them).
  void ensure_topology();
  void set_topology(const char* names, std::size_t stride);
  // One allgather: every rank's newest depth()+2 slots of `slots` (restore:
  // versions; restore_resized: prior) with its sequence and host name,
  // which set the topology when `topology` is true.
  std::vector<detail::Inventory> exchange_inventories(const std::vector<std::unique_ptr<detail::Slot>>& slots,
                                                      bool topology);
  // restore()'s plan without that exchange when one reduction shows it is
  // trivial: every rank holds its own image and its buddy's copy of the
  // same newest version (nothing to move), or detail::fresh_start: no
  // communicator of the store's own needed. No reduction either when the
  // repair before agreed the fresh start (`repair_facts`, used once). nullopt
  // otherwise. `on`: the store's communicator or the app's it duplicates.
  std::optional<detail::RestorePlan> plan_without_exchange(const Comm& on, bool cold);
  std::int64_t newest(int n) const;             // iteration of the newest version of size n (-1: none)
  detail::FreshFacts fresh_facts(int n) const;  // this rank's, on a comm of size n
  // The facts a repair agreed on since set_comm() (StoreAccess::agreed),
  // for the next restore(); a commit drops them (they are no longer true).
  std::optional<detail::FreshFacts> repair_facts;
  // The same for any summaries, `k` per rank (padded; equal on every rank).
  std::vector<detail::Inventory> exchange_summaries(const std::vector<detail::SlotSummary>& mine,
                                                    std::size_t k, bool topology);

  // Redundancy (redundancy.cpp); collective. Return false when some rank
  // of the exchange had no image to give (its pack failed).
  bool protect(detail::Slot& s, bool mine_ok);
  bool alone();  // a single rank, whose versions nothing protects (said once)
  bool protect_buddy(detail::Slot& s, bool mine_ok, bool in_background);
  bool protect_parity(detail::Slot& s, bool mine_ok);
  // A parity ring's buffers for `s` (its image padded to the stripe), and
  // the slot's parity block kept once the ring is done.
  detail::ParityRing::Buffers parity_buffers(detail::Slot& s, const detail::ParityStripe& p);
  static void keep_parity(detail::Slot& s, const detail::ParityStripe& p);
  // After an error `rc` on one of `rs`: the rest go to the orphans and the
  // comm is revoked (the caller's check throws). Returns rc.
  int orphan_on_error(std::vector<MPI_Request>& rs, int rc);
  int complete(std::vector<MPI_Request>& rs, bool block, bool& done);  // test_all, then the above
  // Members' host memory onto transparent huge pages before an unpack
  // touches it first.
  void advise_fresh_members();
  // Restore from memory by plan; false when a check failed on some rank.
  bool restore_memory(const detail::RestorePlan& plan);
  // Its buddy scheme's part: this rank's image into `mine`, or straight
  // into the members (`me_direct`); false when a check failed here.
  bool restore_buddies(const detail::RestorePlan& plan, detail::Slot*& mine, const std::string& what,
                       bool& me_direct);
  detail::Pull pull_buddy(const detail::RestorePlan& plan, detail::Transfer& t, detail::Slot*& mine);
  detail::Pull post_member_pulls(detail::Slot& s, const detail::RankPlan& me, detail::Transfer& t);
  void finish_pull(const detail::Pull& pull, detail::Slot& s, const std::string& what);
  bool verify_sent(const detail::RestorePlan& plan);
  void plan_protect(const detail::RestorePlan& plan);  // into `deferred`
  void plan_own_copy(const detail::RestorePlan& plan, int q);
  void start_deferred();  // posts `deferred` and the static members' (start_reprotection)
  void rebuild_parity(const detail::RestorePlan& plan, detail::Slot*& mine);
  // restore_resized (resize.cpp): old rank q's image from its old parity
  // group, into `out` on the rank the plan chose. Collective over the group.
  void rebuild_prior(const detail::PriorPlan& plan, int q, detail::Buffer& out);
  // restore_resized's steps, in order (resize.cpp); collective but read_prior.
  detail::PriorPlan plan_prior_restore();

  // restore() at a cold start, when nothing of this size was restored: the
  // newest complete version of another size among the storage levels `f`
  // reads (collective). restore_resized() takes it.
  std::optional<detail::StoredPrior> find_stored_prior(const detail::RestoreFacts& f);
  std::optional<detail::StoredPrior> stored_prior;  // its plan, for this comm's ranks
  // Set with it; it stays across repairs until a version of this size is
  // committed: a failure inside the resize that follows (restore_resized()
  // finds it again), or in the steps before that commit (restore()'s
  // inventories carry it: the stored version is resized again).
  bool resize_from_storage = false;
  // After a shrink: memory's version of `plan`, or a level below standing in
  // for the images memory lost; throws CheckpointLost when none can.
  detail::StoredPrior prior_after_shrink(const detail::PriorPlan& plan);
  std::vector<char> exchange_wants(const std::vector<char>& want);  // per new rank, per old rank
  void fetch_prior(const detail::PriorPlan& plan, std::int64_t iteration, const std::vector<char>& want,
                   const std::vector<char>& wanted, detail::PriorPieces& out);
  std::vector<detail::PriorImage> check_prior(const PriorVersion& v, detail::PriorPieces& pieces);
  CheckpointStats finish_prior(const PriorVersion& v, const detail::Level& from, std::int64_t seq,
                               const detail::PriorPieces& pieces, double seconds);

  // Static members (statics.cpp); collective. Return the bytes sent
  // (publish: at the first commit after registration, else 0) or received.
  std::uint64_t publish_statics();
  void start_over();  // every version retired, as at a fresh start (restore(), StoreAccess)
  // Fills `lost` with the ranks whose static data nobody holds any more.
  std::uint64_t restore_statics(std::vector<int>& lost);
  void reset_statics(int size);  // the comm changed size: copies of another decomposition
  std::vector<std::uint64_t> static_sizes() const;
  detail::StaticState gather_static_state() const;
  void exchange_static_headers(std::vector<detail::StaticStream>& streams);
  detail::IncomingHeld post_static_streams(const std::vector<detail::StaticStream>& streams,
                                           detail::Transfer& t);
  std::uint64_t run_static_streams(std::vector<detail::StaticStream>& streams);
  void start_deferred_statics();  // sc.deferred, completed in the background
  void install_held(detail::IncomingHeld& in);

  // A version read back from a lower level (own image in `slot`) becomes
  // the only one, re-protected in memory (buddy copies in the background:
  // until they arrive, the level it came from still holds it). Collective.
  void adopt(std::unique_ptr<detail::Slot> slot, std::int64_t iteration, std::int64_t sequence);

  std::vector<char> gather_host_names();    // kHostName bytes per rank. Collective.
  std::vector<std::string> gather_hosts();  // every rank's host name. Collective.
  // restore(): where this rank's time went, step by step (seconds), for the
  // restoring level's log line.
  std::vector<std::pair<const char*, double>> restore_steps;
  bool restored_before = false;  // a restore() returned on this rank (the job's start read storage)
  // "arrival 12.0, inventory 3.1, ... ms" and their sum (seconds).
  std::string restore_steps_text(double& total) const;
};

}  // namespace fx
