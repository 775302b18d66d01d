#pragma once
// What a checkpoint level may use of the store's core: its communicator,
// the registered members, the versions it holds, and the steps of a
// restore. A level (level.hpp) is written against this and nothing else
// of the core; level_context.cpp forwards each call to the store.
#include <fx/comm.hpp>
#include <fx/data_store/member.hpp>
#include <fx/data_store/store_access.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "buffer.hpp"
#include "device_staging.hpp"
#include "image.hpp"
#include "plan.hpp"
#include "slot.hpp"

namespace fx::detail {

struct StoredPrior;
struct PriorRequest;
struct PriorPieces;
struct RestorePlan;

class LevelContext {
 public:
  // `core`: the store's internals, which outlive the context.
  explicit LevelContext(StoreAccess::Impl& core) : core_(core) {}

  // The communicator (the store's own duplicate of the app's).
  const Comm& comm() const;
  int rank() const;
  int size() const;
  // Every rank's `ok`, ANDed by an agreement; throws ProcessFailure.
  bool agree(bool ok);
  std::vector<std::string> gather_hosts();  // every rank's host name. Collective.
  int buddy_distance() const;               // the buddy scheme's, on this comm's hosts
  bool parity() const;                      // checkpoint.memory.scheme is parity

  // Messages whose unfinished requests (a failure) the store drains before
  // their buffers go: `keep_until_drained` hands it those buffers.
  Transfer transfer();
  void keep_until_drained(Buffer buffer);
  void keep_until_drained(std::vector<Buffer>& buffers);

  // The registered members, and an image checked against them into them
  // (`what` names the image in errors; throws CheckpointError).
  std::vector<Member>& members();
  void unpack(const ImageInfo& info, const std::byte* image, const std::string& what);
  void advise_fresh_members();  // before a relaunched process's first unpack

  // Versions: a slot for reading one into (its buffers reused), one given
  // back unused, and one read back that becomes the store's only version,
  // re-protected in memory (collective).
  std::unique_ptr<Slot> spare_slot();
  void give_back(std::unique_ptr<Slot> slot);
  void adopt(std::unique_ptr<Slot> slot, std::int64_t iteration, std::int64_t sequence);
  std::string below_memory() const;  // "trying node-local storage and HDF5"

  // A restore's steps on this rank, for the restoring level's log line.
  void step(const char* name, double seconds);
  std::string steps_text(double& total) const;  // "arrival 12.0, ... ms", their sum

  // Every rank's inventory of `mine` (collective; empty when no rank has any).
  std::vector<std::vector<SlotSummary>> exchange_summaries(const std::vector<SlotSummary>& mine);
  // restore_resized(): the images `p` holds here (pieces.local) to the ranks
  // that want them, theirs from the others (collective).
  void fetch_prior(const StoredPrior& p, const PriorRequest& r, PriorPieces& pieces);

  // The memory level's: the redundancy of a version, a restore from memory
  // by plan, the version it restored, and versions above one set aside.
  bool protect(Slot& s);
  bool restore_memory(const RestorePlan& plan);
  void set_committed(std::int64_t iteration, std::int64_t sequence);
  void drop_above(std::int64_t iteration);

 private:
  StoreAccess::Impl& core_;
};

}  // namespace fx::detail
