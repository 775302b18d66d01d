#pragma once
/// \file
/// The data store's settings, as the configuration's `checkpoint:` section sets them.
#include <fx/enum_names.hpp>

#include <string>

namespace fx {

/// In-memory redundancy: a full copy on the buddy, or XOR parity over groups.
enum class MemoryScheme { buddy, parity };
/// Versions exist on disk but none is usable (corrupted, truncated, missing
/// rank files, other rank count): start from scratch, or throw
/// fx::CheckpointLost on every rank.
enum class UnusablePolicy { fresh, stop };
/// Who copies an asynchronous commit's during_next_step members: a thread
/// of the store's own beside the app's next step, the app's thread at that
/// step's end, or (automatic) the thread when this host has a core no rank
/// keeps busy.
enum class SnapshotCopier { automatic, thread, step_end };
/// Who moves an asynchronous commit's buddy exchange on: a thread of the
/// store's own beside the app's steps (MPI_THREAD_MULTIPLE), the app's
/// thread in its calls (progress() at each step end, and its own MPI
/// calls), or (automatic) the thread when the MPI library gives
/// MPI_THREAD_MULTIPLE and this host has a core no rank keeps busy.
enum class ExchangeProgress { automatic, thread, app };

/// `checkpoint.memory`: the in-memory level, and when commits happen.
struct MemoryCheckpointConfig {
  int every = 0;            ///< commit every k iterations (0: off)
  bool every_auto = false;  ///< every: auto, the runtime picks k from the commit cost and the MTBF
  int buddy_distance = 1;   ///< buddy of logical rank r holds r's copy: r + distance
  MemoryScheme scheme = MemoryScheme::buddy;  ///< buddy copies or XOR parity
  int parity_group = 4;  ///< parity: ranks per XOR group (>= 2; the last group takes the rest)
  int depth = 2;         ///< versions kept
  /// Commits return once the snapshot is taken; the exchange (buddy copies
  /// or the parity ring) and the agreement finish in the background
  /// (DataStore::progress), the version is committed then. A node-local or
  /// HDF5 write due is part of it, at any rank count (files on a thread of
  /// the store's, the marker or manifest after the agreement); one whose
  /// write exchanges images (node-local partner copies under parity) is
  /// synchronous.
  bool async = true;
  SnapshotCopier copier = SnapshotCopier::automatic;  ///< who copies during_next_step members
  ExchangeProgress progress =
      ExchangeProgress::automatic;  ///< who moves the buddy exchange (or parity ring) on
};

/// What every storage level below memory is set by (`checkpoint.node`,
/// `checkpoint.hdf5`, and a level added to the store): how often it keeps a
/// version, where, how many, and what a restore does when none it holds is
/// usable.
struct StorageLevelConfig {
  int every = 0;          ///< every m-th memory commit also to this level (0: off)
  std::string directory;  ///< where its versions go; must be writable
  int keep = 2;           ///< complete versions retained (per directory)
  /// Versions found but none usable: start from scratch, or throw fx::CheckpointLost.
  UnusablePolicy on_unusable = UnusablePolicy::fresh;
};

/// `checkpoint.node`: node-local storage (SCR's second level), which
/// survives a lost host when the partner copies are on, without the shared
/// filesystem's cost. `directory`: `{host}` is this host's name; a version
/// is unusable when every copy of some image failed its checks.
struct NodeCheckpointConfig : StorageLevelConfig {
  /// The default directory, `/tmp/fx-node-{host}`.
  NodeCheckpointConfig() { directory = "/tmp/fx-node-{host}"; }
  bool partner = true;  ///< also write the buddy copy this rank holds (needs scheme: buddy)
};

/// `checkpoint.hdf5`: versions on disk, one HDF5 file per rank per version.
struct Hdf5CheckpointConfig : StorageLevelConfig {
  /// The default directory, `fx-checkpoints`.
  Hdf5CheckpointConfig() { directory = "fx-checkpoints"; }
  /// A new run (a cold start) restores from the newest valid version in
  /// storage, node-local or HDF5.
  bool restart = true;
};

/// `checkpoint`: every setting of the data store.
struct CheckpointConfig {
  double mtbf_s = 0;              ///< the job's mean time between failures, for every: auto (0: unknown)
  MemoryCheckpointConfig memory;  ///< `checkpoint.memory`
  NodeCheckpointConfig node;      ///< `checkpoint.node`
  Hdf5CheckpointConfig hdf5;      ///< `checkpoint.hdf5`
};

}  // namespace fx

FX_ENUM_NAMES(fx::MemoryScheme, {fx::MemoryScheme::buddy, "buddy"}, {fx::MemoryScheme::parity, "parity"})
FX_ENUM_NAMES(fx::SnapshotCopier, {fx::SnapshotCopier::automatic, "auto"},
              {fx::SnapshotCopier::thread, "thread"}, {fx::SnapshotCopier::step_end, "step_end"})
FX_ENUM_NAMES(fx::ExchangeProgress, {fx::ExchangeProgress::automatic, "auto"},
              {fx::ExchangeProgress::thread, "thread"}, {fx::ExchangeProgress::app, "app"})
FX_ENUM_NAMES(fx::UnusablePolicy, {fx::UnusablePolicy::fresh, "fresh"}, {fx::UnusablePolicy::stop, "stop"})
