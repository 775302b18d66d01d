#pragma once
// The runtime's way into the store around a repair (not installed): the
// facts of restore()'s fresh rule ride on the repair's one agreement, so a
// data-less restore() after a repair needs no collective of its own.
#include <fx/data_store/store.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fx::detail {

class Level;
class LevelContext;
// Makes a checkpoint level of a store (data-store/src/level.hpp), from the
// store's context for its levels and its settings.
using LevelMaker = std::function<std::unique_ptr<Level>(LevelContext&, const CheckpointConfig&)>;

struct StoreAccess {
  // The store's internals (data-store/src/store_impl.hpp), for its parts.
  using Impl = DataStore::Impl;
  // A store with these settings; set_comm() gives it its communicator.
  // Throws CheckpointError for a parity group of fewer than 2 ranks, or with
  // the HDF5 level on when fx's HDF5 plugin cannot be loaded.
  static std::unique_ptr<DataStore> make(CheckpointConfig options = {}) {
    return std::unique_ptr<DataStore>(new DataStore(std::move(options)));
  }
  // The same with the levels `levels` makes, fastest first, memory first
  // (standard_levels() and a test's own level).
  static std::unique_ptr<DataStore> make(CheckpointConfig options, const std::vector<LevelMaker>& levels);
  // Collective after a repair (or at start): restore the newest version
  // every rank can get (own memory, buddy or parity, then node-local
  // storage or HDF5, the newer first); its iteration, or nullopt when there
  // is none (a fresh start; CheckpointStats::other_size: a version of
  // another job size). A version failing its checks is passed over
  // (CheckpointStats::skipped). Throws ProcessFailure on a failure (call it
  // again after the next repair), CheckpointLost when nothing is usable and
  // a level's on_unusable is 'stop'.
  static std::optional<std::int64_t> restore(DataStore& store) { return store.restore(); }
  // Move an asynchronous commit on (not collective, never blocks on peers):
  // waits for the snapshot of during_next_step members (after the step
  // following the commit), tests the exchange, posts and tests the
  // agreement. True when this call committed the version (take_committed()
  // then has its stats). Throws ProcessFailure if a peer died.
  static bool progress(DataStore& store) { return store.progress(); }
  // The stats of an asynchronous commit committed since the last call, once.
  static std::optional<CheckpointStats> take_committed(DataStore& store) { return store.take_committed(); }
  // What the last restore_resized() restored, once: the runtime reports the
  // iteration and level a resize resumed from.
  static std::optional<CheckpointStats> take_resized_restore(DataStore& store) {
    return store.take_resized_restore();
  }
  // Post the re-protection restore() planned (the buddy copies a failure
  // took, static ones included, and a recovered rank's own copy) and
  // return: MPI moves them during the app's next steps. Not collective. The
  // runtime calls it after the first step; flush() does it when nobody did.
  static void start_reprotection(DataStore& store) { store.start_reprotection(); }
  // Wait for that re-protection (posting it first) and for an asynchronous
  // commit in flight (its agreement: collective then). commit() and
  // restore() do it first themselves. Throws ProcessFailure if a peer died.
  static void flush(DataStore& store) { store.wait_pending(); }
  // At the job's start, before its steps (members registered, comm set;
  // not collective): the buffers of the versions to come (their images and
  // the buddies' copies, checkpoint.memory.depth of them), allocated and
  // every page touched now, so that the first commits do neither (a fresh
  // 64 MiB image cost the first commits of a host run 20 times a later
  // one's time). Nothing when the config commits only by hand (every: 0).
  static void reserve(DataStore& store) { store.reserve(); }
  // The image buffers the store holds (own and buddy copy, versions and
  // pool): a test sees that commits reuse what reserve() made.
  static std::vector<const void*> image_buffers(const DataStore& store);
  // How many of the store's own images lie in pinned memory (all of them
  // when a member lives on the device, none else).
  static int pinned_images(const DataStore& store);
  // Old rank's checked image, as restore_resized() hands it to PriorUse.
  static PriorPiece piece(const PriorImage& image) { return PriorPiece(image); }
  // Every registration goes, static ones too (before resize(), after a
  // Reinit function).
  static void clear(DataStore& store) { store.clear_registrations(); }
  // DataStore::set_comm / revoke / set_fault_hook: the runtime's (and the
  // in-tree tests' and benchmarks'), not an application's.
  static void set_comm(DataStore& store, Comm comm) { store.set_comm(std::move(comm)); }
  static void revoke(DataStore& store) { store.revoke(); }
  static void set_fault_hook(DataStore& store, DataStore::FaultHook hook) {
    store.set_fault_hook(std::move(hook));
  }
  // Bits of RepairRequest::carried (ANDed over the live processes).
  static constexpr int kNothing = 1;                       // this store holds no version, its sequence is 0
  static constexpr int kNotRestored = 2;                   // no restore() returned on this store
  static constexpr int kUnused = kNothing | kNotRestored;  // a spare's store
  // Where an asynchronous commit's image exchange is (flags only, no MPI
  // call): not posted (no commit in flight, or its sizes still coming),
  // moving on the store's progress thread, complete there, or moved on by
  // the app's calls (checkpoint.memory.progress).
  enum class Exchange { not_posted, on_thread, done_on_thread, in_app_calls };
  static Exchange exchange(const DataStore& store);
  // This process's bits; the store's comm is set.
  static int facts(const DataStore& store);
  // What the repair agreed (the AND of every live process's bits), after
  // set_comm() on the repair's new comm: the next restore() takes a fresh
  // start from them without its reduction when the rule holds on them,
  // else runs as without them. Used once; set_comm() and commit() drop it.
  static void agreed(DataStore& store, int facts);
  // The buddy distance a buddy-scheme store keeps copies at on ranks placed
  // on `hosts` (by logical rank), `preferred` configured: what every
  // process, spares included, can know without the store's exchange.
  static int buddy_distance_for(const std::vector<std::string>& hosts, int preferred);
  // recovery.on_lost_checkpoint: restart after a restore: the versions
  // go, as at a fresh start (the app initializes at iteration 0).
  static void start_over(DataStore& store);
};

}  // namespace fx::detail
