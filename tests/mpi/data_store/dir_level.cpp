// A checkpoint level of the test tree's own, in one file: every `every`-th
// commit, each rank's image as a plain file in a directory all ranks share,
//
//   <directory>/iter-000000000040/rank-000003.img   rank 3's image
//   <directory>/iter-000000000040/manifest.yaml     written by rank 0 once every rank wrote its file
//
// It is written against the level interface (level.hpp) and the context
// (level_context.hpp) only, as any level of the store is, and joins a store
// by its line in the store's list of levels (level_walk_test.cpp, which
// declares the two names below).
#include <fx/clock.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <fstream>

#include "level.hpp"
#include "manifest.hpp"
#include "paths.hpp"

namespace fx::test {

// Its number in stats and reports, past fx's own levels.
extern const CheckpointLevel kDirLevel = static_cast<CheckpointLevel>(16);
detail::LevelMaker dir_level(const StorageLevelConfig& options);

namespace {

namespace fs = std::filesystem;
using detail::Slot;

class DirLevel final : public detail::StorageLevel<StorageLevelConfig> {
 public:
  using StorageLevel::StorageLevel;
  CheckpointLevel id() const override { return kDirLevel; }
  const char* name() const override { return "the test directory"; }
  double& seconds(CheckpointStats&) const override { return seconds_; }

  std::string write(const Slot& s, CheckpointStats& st) override;
  void conclude_publish(Slot& s, bool all_wrote, const std::string& error) override;
  bool reads(const detail::RestoreFacts& f) const override {
    return !f.plan.fresh && on() && (f.plan.history || f.restart);
  }
  void open(const detail::RestoreFacts& f) override;
  std::int64_t next() const override { return next_ < found_.size() ? found_[next_].iteration : -1; }
  bool load() override;
  void set_aside_above(std::int64_t iteration) override;
  std::string give_up() const override {
    if (damaged_.empty()) return "";
    return unusable(fmt::format("no version in {} is usable (iteration(s) {} failed their checks)",
                                o_.directory, fmt::join(damaged_, ", ")),
                    "dir", true);
  }

 private:
  fs::path file(std::int64_t iteration, int rank) const {
    return fs::path(o_.directory) / detail::version_dir_name(iteration) /
           fmt::format("rank-{:06d}.img", rank);
  }
  bool read(const detail::Manifest& m, Slot& slot);

  mutable double seconds_ = 0;           // its own stats slot: CheckpointStats has none for it
  std::vector<detail::Manifest> found_;  // this size's versions, newest first
  std::size_t next_ = 0;
  std::vector<std::int64_t> damaged_;
};

// Every rank writes its file (no MPI call: it may run on the store's
// thread); once all agree they did, rank 0 writes the manifest and keeps
// the newest `keep` versions.
std::string DirLevel::write(const Slot& s, CheckpointStats&) {
  try {
    detail::make_version_dir(o_.directory, s.iteration);
    detail::write_file_durably(file(s.iteration, s.own_info.rank), s.own.data(), s.own_info.total_bytes);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

void DirLevel::conclude_publish(Slot& s, bool all_wrote, const std::string& error) {
  if (!all_wrote) FX_THROW(CheckpointError, error.empty() ? "another rank failed" : error);
  if (ctx_.rank() == 0) {
    detail::Manifest m;
    m.iteration = s.iteration;
    m.sequence = s.sequence;
    m.rank_count = ctx_.size();
    detail::write_manifest(fs::path(o_.directory) / detail::version_dir_name(s.iteration), m);
    int kept = 0;
    for (const auto& v : detail::list_versions(o_.directory))
      if (v.complete && ++kept > o_.keep) fs::remove_all(v.path);
  }
}

// Rank 0 lists the complete versions of this job size; every rank gets
// their iterations and sequences.
void DirLevel::open(const detail::RestoreFacts&) {
  found_.clear();
  next_ = 0;
  damaged_.clear();
  std::vector<std::int64_t> flat;
  if (ctx_.rank() == 0) {
    for (const auto& v : detail::list_versions(o_.directory)) {
      if (!v.complete) continue;
      const auto m = detail::read_manifest(v.path / detail::kManifestName, false);
      if (m.rank_count != ctx_.size()) continue;
      flat.push_back(m.iteration);
      flat.push_back(m.sequence);
    }
  }
  auto n = static_cast<std::uint64_t>(flat.size());
  ctx_.comm().bcast(&n, 1, 0);
  flat.resize(n);
  if (n > 0) ctx_.comm().bcast(flat.data(), flat.size(), 0);
  for (std::size_t i = 0; i < flat.size(); i += 2) {
    detail::Manifest& m = found_.emplace_back();
    m.iteration = flat[i];
    m.sequence = flat[i + 1];
  }
}

// This rank's file, checked against its header and the members.
bool DirLevel::read(const detail::Manifest& m, Slot& slot) {
  const std::string what = fmt::format("{} of iteration {}", name(), m.iteration);
  try {
    std::ifstream in(file(m.iteration, ctx_.rank()), std::ios::binary | std::ios::ate);
    if (!in) FX_THROW(CheckpointError, fmt::format("{}: no file of this rank", what));
    slot.own.reset(static_cast<std::size_t>(in.tellg()));
    in.seekg(0);
    in.read(reinterpret_cast<char*>(slot.own.data()), static_cast<std::streamsize>(slot.own.size()));
    slot.own_info = detail::read_header(slot.own.data(), slot.own.size(), slot.own.size(), what);
    if (slot.own_info.rank != ctx_.rank() || slot.own_info.iteration != m.iteration)
      FX_THROW(CheckpointError, fmt::format("{}: another rank's or version's image", what));
    ctx_.unpack(slot.own_info, slot.own.data(), what);
  } catch (const CheckpointError& e) {
    log::warn("{}", e.what());
    return false;
  }
  return true;
}

bool DirLevel::load() {
  const detail::Manifest& m = found_[next_];
  auto slot = ctx_.spare_slot();
  if (ctx_.agree(read(m, *slot))) {
    ctx_.adopt(std::move(slot), m.iteration, m.sequence);
    return true;
  }
  ctx_.give_back(std::move(slot));
  damaged_.push_back(m.iteration);
  ++next_;
  return false;
}

// Versions above the one restored, and those that failed their checks,
// go aside (rank 0), never deleted.
void DirLevel::set_aside_above(std::int64_t iteration) {
  if (ctx_.rank() != 0) return;
  for (const auto& v : detail::list_versions(o_.directory)) {
    const bool failed = std::find(damaged_.begin(), damaged_.end(), v.iteration) != damaged_.end();
    if (v.iteration > iteration || failed) detail::move_aside(o_.directory, v.path);
  }
}

}  // namespace

detail::LevelMaker dir_level(const StorageLevelConfig& options) {
  return [options](detail::LevelContext& ctx, const CheckpointConfig&) {
    return std::make_unique<DirLevel>(ctx, options);
  };
}

}  // namespace fx::test
