#pragma once
// The runtime's way into the store around a repair (not installed): the
// facts of restore()'s fresh rule ride on the repair's one agreement, so a
// data-less restore() after a repair needs no collective of its own.
#include <fx/data_store/store.hpp>

#include <string>
#include <utility>
#include <vector>

namespace fx::detail {

struct StoreAccess {
  // The store's internals (data-store/src/store_impl.hpp), for its parts.
  using Impl = DataStore::Impl;
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
