#pragma once
// A checkpoint level: where a version is kept (memory, node-local storage,
// HDF5) and where restore() looks for one. Every level is one class behind
// this interface, in a file of its own, that reaches the store's core only
// through its LevelContext; standard_levels() (levels.cpp) lists them,
// fastest first, and the core walks them. Adding a level: its file and its
// line in that list (or, for a test's level, in the test's list).
#include <fx/data_store/level.hpp>
#include <fx/data_store/options.hpp>
#include <fx/data_store/store.hpp>
#include <fx/log.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "buffer.hpp"
#include "level_context.hpp"
#include "manifest.hpp"
#include "node_files.hpp"
#include "resize_plan.hpp"

namespace fx::detail {

class Level;

// A complete version written by another number of ranks, which
// restore_resized() re-decomposes: after a shrink, the survivors' memory (or
// a storage level standing in for images memory lost); after a relaunch on
// fewer ranks, what restore() found in storage at the cold start.
struct StoredPrior {
  Level* from = nullptr;  // the level that found it, and reads it (read_prior)
  std::int64_t iteration = -1;
  std::int64_t sequence = 0;    // the commit cadence goes on from it
  int old_size = 0;             // ranks that wrote it
  PriorPlan plan;               // memory, node: where each old rank's image is
  std::vector<NodeFile> files;  // node: this rank's files of that version
  Manifest manifest;            // hdf5
};

// The old images restore_resized() gathered on this rank, by old rank, for
// the app's PriorUse (resize.cpp).
struct PriorPieces {
  std::map<int, Buffer> received;  // from their holders, or from disk
  std::map<int, Buffer> local;     // images this rank made for the others: rebuilt from
                                   // parity, or mapped from its node-local files
  std::map<int, std::pair<const std::byte*, std::size_t>> at;  // image and size (null: gone)
  std::uint64_t moved = 0;                                     // bytes received or read
  std::string error;                                           // why a piece could not be had
};

// Which old ranks this rank wants (`want`, one flag per old rank) and every
// new rank wants (`wanted`, new rank-major).
struct PriorRequest {
  std::vector<char> want;
  std::vector<char> wanted;
};

// What a restore knows before it reads any level (the same on every rank).
struct RestoreFacts {
  const RestorePlan& plan;                // memory's plan; plan.history: not a cold start
  double t0 = 0;                          // when restore() began
  bool restart = true;                    // checkpoint.hdf5.restart: a cold start reads storage
  std::function<void(StorePoint)> fault;  // the store's fault point, at iteration -1
};

// A commit handing a committed version to the levels below memory.
struct KeepContext {
  CheckpointStats& stats;
  std::function<void(StorePoint)> fault;  // the store's fault point, at this version's iteration
};

class Level {
 public:
  virtual ~Level() = default;
  // How stats and reports name it; a level outside fx's own (a test's)
  // takes a number past them, and logs name it by name().
  virtual CheckpointLevel id() const = 0;
  // "node-local storage": how logs name it.
  virtual const char* name() const = 0;
  // Its part of a commit's or restore's time (CheckpointStats::node_seconds).
  virtual double& seconds(CheckpointStats& st) const = 0;
  // Memory holds every committed version first, so the levels below are
  // read only when it has nothing usable (restore()'s two tiers).
  virtual bool storage() const { return true; }
  // Configured at all (checkpoint.<level>.every > 0).
  virtual bool on() const = 0;

  // Commit: whether commit number `sequence` is kept here, and keeping it
  // in two parts: write() this rank's part of `s` (a storage level's files;
  // no MPI call unless write_exchanges(), so that an asynchronous commit
  // runs it on a thread of the store's beside the app's steps), saying why
  // it could not (""); then publish() (collective, a
  // synchronous commit's; see the parts below): memory keeps the redundancy before
  // the agreement that commits a version, the levels below make a committed
  // one complete once every rank wrote (the agreement, then retention).
  // False when some rank had no image to give (memory). Throws
  // CheckpointError when a rank could not write, ProcessFailure on a failure.
  virtual bool due(std::int64_t sequence) const = 0;
  virtual std::string write(const Slot& s, CheckpointStats& st) {
    (void)s;
    (void)st;
    return "";
  }
  virtual bool publish(Slot& s, const KeepContext& c, const std::string& error) = 0;
  // write() exchanges images with peers (collective): a commit it is due
  // in is synchronous.
  virtual bool write_exchanges() const { return false; }
  // A storage level's publish() in parts, none of which blocks on a peer,
  // so that an asynchronous commit runs them from progress():
  // post_publish() after write() (its messages into `t`, its fault point),
  // then the commit's own agreement ANDs every rank's write, and
  // conclude_publish() does the local rest (marker, manifest, retention);
  // it throws CheckpointError when some rank did not write (`all_wrote`),
  // or when this rank could not make the version complete.
  virtual void post_publish(const Slot& s, const KeepContext& c, Transfer& t) {
    (void)s;
    (void)c;
    (void)t;
  }
  virtual void conclude_publish(Slot& s, bool all_wrote, const std::string& error) {
    (void)s;
    (void)all_wrote;
    (void)error;
  }

  // Restore: whether this restore reads the level, and listing what it
  // holds of the comm's size (collective; called once per restore).
  virtual bool reads(const RestoreFacts& f) const = 0;
  virtual void open(const RestoreFacts& f) = 0;
  // The iteration of the newest version not tried yet (-1: none left).
  virtual std::int64_t next() const = 0;
  // Check and load next() into the members, adopting it as the store's
  // only version (collective). False: it failed on some rank, and next()
  // has moved on (to other copies of it, or an older version).
  virtual bool load() = 0;
  // After a failed load(): what failed, in a few words, the same everywhere.
  virtual std::string failure() const { return "failed its checks"; }
  // The restore returned `iteration` (-1: a fresh start): versions above
  // it are an abandoned future, or failed their checks. Set aside, never
  // deleted; levels this restore did not read keep theirs where that is
  // their rule.
  virtual void set_aside_above(std::int64_t iteration) = 0;
  // Nothing was restored: what the level lost (ranks it found nowhere),
  // true when it held versions of this size but none was usable.
  virtual bool lost(std::vector<int>& ranks) const {
    (void)ranks;
    return false;
  }
  // Nothing was restored and the level's versions all failed their checks:
  // what they were, when checkpoint.<level>.on_unusable is 'stop' (restore
  // then throws CheckpointLost naming every such level's); else "" (the
  // level says that it starts from scratch).
  virtual std::string give_up() const { return ""; }
  // A cold start found nothing of this size: the newest complete version
  // written by another number of ranks (collective). Memory's are
  // restore_resized()'s own.
  virtual std::optional<StoredPrior> prior() { return std::nullopt; }
  // restore_resized() after a shrink, when memory lost some old image:
  // whether this level stands in with a complete version of the old size,
  // and that version, newest (collective), or nullopt and why not (`why`:
  // "the HDF5 level is off (...)", the same on every rank).
  virtual bool covers_lost_memory() const { return false; }
  virtual std::optional<StoredPrior> prior_of_size(int old_size, std::string& why) {
    (void)old_size;
    why = "nothing below memory keeps versions";
    return std::nullopt;
  }
  // restore_resized(): the old images of `p` (which this level found) that
  // the ranks want, into `pieces`; a reason in pieces.error when one could
  // not be had (collective; the checks after it agree on the outcome).
  virtual void read_prior(const StoredPrior& p, const PriorRequest& r, PriorPieces& pieces);
  // restore_resized() resumed from `iteration`, read from this level when
  // `source`: what the level holds above it is an abandoned future.
  virtual void after_resized(std::int64_t iteration, bool source) {
    (void)iteration;
    (void)source;
  }
};

using Levels = std::vector<std::unique_ptr<Level>>;

// checkpoint.<level>.every: commit number `sequence` is due (0: never).
inline bool every_nth(std::int64_t sequence, int every) { return every > 0 && sequence % every == 0; }

// The head every storage level shares: its settings (`Config`, derived from
// StorageLevelConfig), on() and due() from them, and on_unusable's rule.
template <class Config>
class StorageLevel : public Level {
 public:
  StorageLevel(LevelContext& ctx, Config options) : ctx_(ctx), o_(std::move(options)) {}
  bool on() const override { return o_.every > 0; }
  bool due(std::int64_t sequence) const override { return every_nth(sequence, o_.every); }
  // A synchronous commit's publish: the parts an asynchronous one runs
  // apart, with a blocking agreement between them.
  bool publish(Slot& s, const KeepContext& c, const std::string& error) override {
    Transfer t = ctx_.transfer();
    post_publish(s, c, t);
    t.wait();
    conclude_publish(s, ctx_.agree(error.empty()), error);
    return true;
  }

 protected:
  // Every version the level found failed its checks (`what` says so):
  // restore()'s reason to throw when checkpoint.<key>.on_unusable is
  // 'stop', else "" (`say`: rank 0 says that the job starts from scratch).
  std::string unusable(const std::string& what, const char* key, bool say) const {
    const std::string policy = std::string("checkpoint.") + key + ".on_unusable is ";
    if (o_.on_unusable == UnusablePolicy::stop) return what + " and " + policy + "'stop'";
    if (say && ctx_.rank() == 0) log::warn("{}; {}'fresh': starting from scratch", what, policy);
    return "";
  }
  LevelContext& ctx_;
  const Config o_;
};

// Each level's file makes it; standard_levels() lists them, fastest first.
std::unique_ptr<Level> memory_level(LevelContext& ctx, const CheckpointConfig& o);
std::unique_ptr<Level> node_level(LevelContext& ctx, const CheckpointConfig& o);
std::unique_ptr<Level> hdf5_level(LevelContext& ctx, const CheckpointConfig& o);
std::vector<LevelMaker> standard_levels();

}  // namespace fx::detail
