// The HDF5 level: every hdf5.every-th commit goes to disk, and restore()
// falls back to (or cold-starts from) the newest complete, valid version.
#include <fx/clock.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

#include "hdf5_plugin.hpp"
#include "level.hpp"

namespace fx {

using detail::Slot;

namespace {

// Rank 0: the complete versions under `root` written by `ranks` ranks,
// newest first, with a warning for each one skipped; `seen` counts the
// versions found at all.
std::vector<detail::Manifest> read_manifests(const std::filesystem::path& root, int ranks,
                                             std::uint64_t& seen) {
  std::vector<detail::Manifest> out;
  for (const auto& v : detail::list_versions(root)) {
    // Retention empties directories before removing them: only files
    // without a manifest mean an unfinished write.
    std::error_code ec;
    if (!v.complete && std::filesystem::is_empty(v.path, ec)) continue;
    ++seen;
    if (!v.complete) {
      log::warn("skipping HDF5 version {}: no {} (the write did not finish)", v.path.string(),
                detail::kManifestName);
      continue;
    }
    try {
      const auto file = v.path / detail::kManifestName;
      detail::Manifest m = detail::read_manifest(file);
      if (m.iteration != v.iteration) {
        FX_THROW(CheckpointError, fmt::format("{}: names iteration {}", file.string(), m.iteration));
      }
      if (m.rank_count != ranks) {
        // Not an error: a relaunch on fewer ranks restores it through restore_resized().
        log::info("skipping HDF5 version {}: written by {} ranks, {} expected", v.path.string(), m.rank_count,
                  ranks);
        continue;
      }
      for (int q = 0; q < ranks; ++q) {
        if (m.files[static_cast<std::size_t>(q)].file != detail::rank_file_name(q)) {
          FX_THROW(CheckpointError, fmt::format("{}: unexpected file name '{}' for rank {}", file.string(),
                                                m.files[static_cast<std::size_t>(q)].file, q));
        }
      }
      out.push_back(std::move(m));
    } catch (const CheckpointError& e) {
      log::warn("skipping HDF5 version: {}", e.what());
    }
  }
  return out;
}

// What each rank reports to rank 0 of the file it wrote.
struct FileReport {
  std::uint64_t bytes = 0;
  std::uint64_t digest = 0;
  std::int32_t ok = 0;
  std::int32_t pad = 0;
};

class Hdf5Level final : public detail::StorageLevel<Hdf5CheckpointConfig> {
 public:
  // A missing HDF5 plugin is found at start, not at the first HDF5
  // checkpoint (a restart alone loads it when a version is there to read).
  Hdf5Level(detail::LevelContext& ctx, const Hdf5CheckpointConfig& o) : StorageLevel(ctx, o) {
    if (on()) hdf5();
  }
  CheckpointLevel id() const override { return CheckpointLevel::hdf5; }
  const char* name() const override { return "HDF5"; }
  double& seconds(CheckpointStats& st) const override { return st.hdf5_seconds; }

  std::string write(const Slot& s, CheckpointStats& st) override;
  bool publish(Slot& s, const detail::KeepContext& c, const std::string& error) override;
  void post_publish(const Slot& s, const detail::KeepContext& c, detail::Transfer& t) override;
  void conclude_publish(Slot& s, bool all_wrote, const std::string& error) override;

  // At a cold start only when hdf5.restart asks for it.
  bool reads(const detail::RestoreFacts& f) const override {
    return !f.plan.fresh && (f.plan.history ? on() || o_.restart : o_.restart);
  }
  void open(const detail::RestoreFacts& f) override;
  std::int64_t next() const override { return next_ < found_.size() ? found_[next_].iteration : -1; }
  bool load() override;
  // HDF5's versions are every rank's, shared: a restore from them sets
  // newer ones aside (adopt()); whichever level wins, the ones that failed
  // their checks go aside too, never to be written over in place.
  void set_aside_above(std::int64_t) override;
  std::string failure() const override { return "unusable on at least one rank"; }
  std::string give_up() const override;
  std::optional<detail::StoredPrior> prior() override;
  bool covers_lost_memory() const override { return true; }
  std::optional<detail::StoredPrior> prior_of_size(int old_size, std::string& why) override;
  void read_prior(const detail::StoredPrior& p, const detail::PriorRequest& r,
                  detail::PriorPieces& pieces) override;
  void after_resized(std::int64_t iteration, bool source) override {
    if (source && ctx_.rank() == 0) detail::set_aside_newer_versions(root(), iteration);
  }

 private:
  std::filesystem::path root() const { return o_.directory; }
  const detail::Hdf5Api& hdf5() {  // loaded at the first HDF5 file read or written
    if (plugin_ == nullptr) plugin_ = &detail::load_hdf5_plugin();
    return *plugin_;
  }
  // Rank 0 reads the manifests of the complete versions written by `ranks`
  // ranks; every rank gets them, newest first. `seen`: versions found at all.
  std::vector<detail::Manifest> manifests(int ranks, std::uint64_t& seen);
  // This rank's file of `m` into `slot` and the members; false on every
  // rank when some rank could not.
  bool load_version(const detail::Manifest& m, Slot& slot);
  // Rank 0 writes the manifest of `s` from the reports (which makes the
  // version complete) and applies retention; throws CheckpointError.
  void write_manifest(const Slot& s);
  void adopt(const detail::Manifest& m, std::unique_ptr<Slot> slot);
  // The rank count of the newest complete version written by another
  // number of ranks than `ranks` (0: none). Collective (rank 0 reads).
  int other_size(int ranks);

  std::optional<detail::StoredPrior> newest_of(int ranks);
  const detail::Hdf5Api* plugin_ = nullptr;
  std::filesystem::path dir_;                  // the version write() wrote into
  FileReport mine_;                            // and what it wrote
  std::vector<FileReport> reports_;            // rank 0: every rank's (post_publish)
  std::vector<std::filesystem::path> doomed_;  // this rank's retired files: the next write() deletes them
  std::vector<std::filesystem::path> retired_dirs_;  // rank 0: directories to remove next time
  bool fallback_ = false;                            // during a run (else a cold restart)
  double t0_ = 0;
  std::vector<detail::Manifest> found_;  // newest first
  std::size_t next_ = 0;                 // into found_
  std::uint64_t seen_ = 0;               // versions found at all
  std::vector<std::int64_t> damaged_;    // this restore's versions that failed load()
};

std::vector<detail::Manifest> Hdf5Level::manifests(int ranks, std::uint64_t& seen) {
  // Flat: per version iteration, sequence, then (bytes, xxh3) per rank.
  const std::size_t stride = 2 + 2 * static_cast<std::size_t>(ranks);
  std::vector<std::uint64_t> flat;
  std::uint64_t head[2] = {0, 0};  // values in `flat`, versions seen at all
  if (ctx_.rank() == 0) {
    for (const auto& m : read_manifests(root(), ranks, head[1])) {
      flat.push_back(static_cast<std::uint64_t>(m.iteration));
      flat.push_back(static_cast<std::uint64_t>(m.sequence));
      for (const auto& f : m.files) {
        flat.push_back(f.bytes);
        flat.push_back(f.checksum);
      }
    }
    head[0] = flat.size();
  }
  ctx_.comm().bcast(head, 2, 0);
  flat.resize(head[0]);
  if (head[0] > 0) ctx_.comm().bcast(flat.data(), flat.size(), 0);
  seen = head[1];
  std::vector<detail::Manifest> out;
  for (std::size_t c = 0; c * stride < flat.size(); ++c) {
    const std::uint64_t* p = flat.data() + c * stride;
    detail::Manifest& m = out.emplace_back();
    m.iteration = static_cast<std::int64_t>(p[0]);
    m.sequence = static_cast<std::int64_t>(p[1]);
    m.rank_count = ranks;
    for (int q = 0; q < ranks; ++q) {
      m.files.push_back({q, detail::rank_file_name(q), p[2 + 2 * q], p[3 + 2 * q]});
    }
  }
  return out;
}

bool Hdf5Level::load_version(const detail::Manifest& m, Slot& slot) {
  const auto dir = root() / detail::version_dir_name(m.iteration);
  int ok = 1;
  try {
    slot.own_info = hdf5().read_rank_file(dir, m, ctx_.rank(), ctx_.members(), slot.own);
  } catch (const CheckpointError& e) {
    ok = 0;
    log::warn("HDF5 version of iteration {} is unusable here: {}", m.iteration, e.what());
  }
  // Members are loaded only once every rank has read its file.
  if (ctx_.comm().allreduce(ok, MPI_MIN) != 1) return false;
  try {
    ctx_.unpack(slot.own_info, slot.own.data(), dir.string());
  } catch (const CheckpointError& e) {
    ok = 0;
    log::warn("{}", e.what());
  }
  return ctx_.comm().allreduce(ok, MPI_MIN) == 1;
}

// Every rank writes its file; once all agree they did, rank 0 writes the
// manifest.
std::string Hdf5Level::write(const Slot& s, CheckpointStats& st) {
  detail::remove_files(std::exchange(doomed_, {}));
  mine_ = FileReport();
  const double t0 = now();
  try {
    dir_ = detail::make_version_dir(root(), s.iteration);
    mine_.bytes = hdf5().write_rank_file(dir_, s.own_info, s.own.data());
    st.hdf5_file_seconds = now() - t0;
    mine_.digest = s.own_info.digest();
    mine_.ok = 1;
  } catch (const CheckpointError& e) {
    log::error("HDF5 checkpoint of iteration {}: {}", s.iteration, e.what());
    return e.what();
  }
  return "";
}

// Every rank's report to rank 0, for the manifest.
void Hdf5Level::post_publish(const Slot&, const detail::KeepContext&, detail::Transfer& t) {
  constexpr std::size_t n = sizeof(FileReport);
  if (ctx_.rank() != 0) {
    t.send(reinterpret_cast<const std::byte*>(&mine_), n, 0, detail::kTagReport);
    return;
  }
  reports_.assign(static_cast<std::size_t>(ctx_.size()), FileReport());
  reports_[0] = mine_;
  for (int q = 1; q < ctx_.size(); ++q)
    t.recv(reinterpret_cast<std::byte*>(&reports_[static_cast<std::size_t>(q)]), n, q, detail::kTagReport);
}

void Hdf5Level::conclude_publish(Slot& s, bool all_wrote, const std::string& error) {
  if (!all_wrote) {
    FX_THROW(
        CheckpointError,
        error.empty()
            ? fmt::format("HDF5 checkpoint of iteration {} failed on another rank (see its log)", s.iteration)
            : error);
  }
  if (ctx_.rank() == 0) write_manifest(s);
  // This rank's files of versions earlier commits retired (every rank has
  // concluded the commit before this one, rank 0 wrote its manifest, once
  // this one's agreement is in): deleted by the next write(), on the writer
  // thread of an asynchronous commit (deleting them is not free).
  doomed_ = detail::rank_files_below(root(), s.iteration, ctx_.rank());
}

// Synchronous: rank 0's failure to write the manifest reaches every rank.
bool Hdf5Level::publish(Slot& s, const detail::KeepContext& c, const std::string& error) {
  int written = 1;
  std::string why;
  try {
    StorageLevel::publish(s, c, error);
  } catch (const CheckpointError& e) {  // everywhere (a rank did not write), or rank 0's manifest
    written = 0;
    why = e.what();
  }
  ctx_.comm().bcast(&written, 1, 0);
  if (written == 0) {
    FX_THROW(CheckpointError,
             !why.empty()
                 ? why
                 : fmt::format("HDF5 checkpoint of iteration {}: rank 0 could not write the manifest "
                               "(see its log)",
                               s.iteration));
  }
  detail::remove_rank_files(root(), s.iteration, ctx_.rank());  // what this commit retired
  return true;
}

void Hdf5Level::write_manifest(const Slot& s) {
  try {
    detail::Manifest m;
    m.iteration = s.iteration;
    m.sequence = s.sequence;
    m.rank_count = ctx_.size();
    for (int q = 0; q < ctx_.size(); ++q) {
      const auto& rep = reports_[static_cast<std::size_t>(q)];
      m.files.push_back({q, detail::rank_file_name(q), rep.bytes, rep.digest});
    }
    detail::write_manifest(dir_, m);
    detail::remove_dirs(retired_dirs_);  // everyone has had a cycle to delete their files
    retired_dirs_ = detail::retire_versions(root(), s.iteration, o_.keep);
    for (const auto& p : retired_dirs_) log::debug("HDF5 retention retires {}", p.string());
  } catch (const CheckpointError& e) {
    log::error("HDF5 checkpoint of iteration {}: {}", s.iteration, e.what());
    throw;
  }
}

void Hdf5Level::open(const detail::RestoreFacts& f) {
  fallback_ = f.plan.history;
  t0_ = now();
  seen_ = 0;
  next_ = 0;
  damaged_.clear();
  found_ = manifests(ctx_.size(), seen_);
  ctx_.step("hdf5-manifests", now() - t0_);
}

bool Hdf5Level::load() {
  const detail::Manifest& m = found_[next_];
  auto slot = ctx_.spare_slot();
  if (load_version(m, *slot)) {
    adopt(m, std::move(slot));
    return true;
  }
  if (ctx_.rank() == 0) {
    log::warn("skipping HDF5 version {}: unusable on at least one rank",
              (root() / detail::version_dir_name(m.iteration)).string());
  }
  ctx_.give_back(std::move(slot));
  damaged_.push_back(m.iteration);
  ++next_;
  return false;
}

void Hdf5Level::set_aside_above(std::int64_t) {
  std::vector<std::int64_t> damaged;
  damaged.swap(damaged_);
  if (ctx_.rank() != 0) return;
  for (const std::int64_t it : damaged) {
    const auto dir = root() / detail::version_dir_name(it);
    try {
      if (const auto to = detail::move_aside(root(), dir))
        log::warn("moved HDF5 version {} aside to {}: it failed its checks", dir.string(), to->string());
    } catch (const CheckpointError& e) {
      log::warn("HDF5 version {} failed its checks and stays in place: {}", dir.string(), e.what());
    }
  }
}

// The version becomes the store's only one; versions above it were
// abandoned or unusable, and go aside (rank 0, while this job writes the
// level).
void Hdf5Level::adopt(const detail::Manifest& m, std::unique_ptr<Slot> slot) {
  const double t = now();
  ctx_.step("load", t - t0_);
  ctx_.adopt(std::move(slot), m.iteration, m.sequence);
  ctx_.step("adopt", now() - t);
  double total = 0;
  const std::string steps = ctx_.steps_text(total);
  log::debug("HDF5 restore on this rank: {:.2f} ms ({})", total * 1e3, steps);
  if (ctx_.rank() != 0) return;
  if (on()) detail::set_aside_newer_versions(root(), m.iteration);
  const auto dir = root() / detail::version_dir_name(m.iteration);
  const std::string text = fmt::format("restored iteration {} from HDF5 ({}) in {:.2f} ms ({})", m.iteration,
                                       dir.string(), total * 1e3, steps);
  if (fallback_)
    log::warn("{}", text);
  else
    log::info("cold restart: {}", text);
}

// 'fresh': each version's skip was said; the caller says what follows.
std::string Hdf5Level::give_up() const {
  if (seen_ == 0) return "";
  return unusable(fmt::format("none of the HDF5 versions under {} is usable{}", root().string(),
                              damaged_.empty() ? ""
                                               : fmt::format(" (iteration(s) {} failed their checks)",
                                                             fmt::join(damaged_, ", "))),
                  "hdf5", false);
}

int Hdf5Level::other_size(int ranks) {
  int other = 0;
  if (ctx_.rank() == 0) {
    for (const auto& v : detail::list_versions(root())) {
      if (!v.complete) continue;
      try {
        const int count = detail::read_manifest(v.path / detail::kManifestName).rank_count;
        if (count != ranks) other = count;
        break;  // only the newest complete version counts
      } catch (const CheckpointError& e) {
        log::debug("HDF5 version {}: {}", v.path.string(), e.what());
      }
    }
  }
  ctx_.comm().bcast(&other, 1, 0);
  return other;
}

// The newest complete version written by `ranks` ranks, as a StoredPrior.
std::optional<detail::StoredPrior> Hdf5Level::newest_of(int ranks) {
  std::uint64_t seen = 0;
  const auto found = manifests(ranks, seen);
  if (found.empty()) return std::nullopt;
  detail::StoredPrior p;
  p.from = this;
  p.manifest = found.front();
  p.iteration = p.manifest.iteration;
  p.sequence = p.manifest.sequence;
  p.old_size = p.manifest.rank_count;
  return p;
}

std::optional<detail::StoredPrior> Hdf5Level::prior() {
  const int ranks = other_size(ctx_.size());
  if (ranks == 0) return std::nullopt;
  return newest_of(ranks);
}

std::optional<detail::StoredPrior> Hdf5Level::prior_of_size(int old_size, std::string& why) {
  if (!on()) {  // no version of this job on disk: name no HDF5 attempt
    why = "the HDF5 level is off (checkpoint.hdf5.every = 0)";
    return std::nullopt;
  }
  auto p = newest_of(old_size);
  if (!p)
    why = fmt::format("{} holds no complete HDF5 version written by {} ranks", root().string(), old_size);
  return p;
}

// Each wanted old rank's file, read as written (no member layout of this job).
void Hdf5Level::read_prior(const detail::StoredPrior& p, const detail::PriorRequest& r,
                           detail::PriorPieces& pieces) {
  const auto dir = root() / detail::version_dir_name(p.manifest.iteration);
  for (int q = 0; q < p.manifest.rank_count; ++q) {
    if (!r.want[static_cast<std::size_t>(q)]) continue;
    try {
      auto& buf = pieces.received[q];
      hdf5().read_rank_file_as_written(dir, p.manifest, q, buf);
      pieces.at[q] = {buf.data(), buf.size()};
      pieces.moved += buf.size();
    } catch (const CheckpointError& e) {
      pieces.error = e.what();
      log::error("restore after the shrink: {}", e.what());
      return;
    }
  }
}

}  // namespace

std::unique_ptr<detail::Level> detail::hdf5_level(LevelContext& ctx, const CheckpointConfig& o) {
  return std::make_unique<Hdf5Level>(ctx, o.hdf5);
}

}  // namespace fx
