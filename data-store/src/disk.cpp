// The HDF5 level: every hdf5.every-th commit goes to disk, and restore()
// falls back to (or cold-starts from) the newest complete, valid version.
#include <fx/clock.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>

#include "store_impl.hpp"

namespace fx {

using detail::Slot;

bool DataStore::Impl::hdf5_due(std::int64_t seq) const {
  return options.hdf5.every > 0 && seq % options.hdf5.every == 0;
}

// Every rank writes its file; once all agree they did, rank 0 writes the
// manifest (which makes the version complete) and applies retention.
void DataStore::Impl::write_hdf5(Slot& s) {
  struct FileReport {
    std::uint64_t bytes = 0;
    std::uint64_t digest = 0;
    std::int32_t ok = 0;
    std::int32_t pad = 0;
  };
  const int r = rank();
  FileReport mine;
  std::string error;
  std::filesystem::path dir;
  const double t0 = now();
  try {
    dir = detail::make_version_dir(root(), s.iteration);
    mine.bytes = hdf5().write_rank_file(dir, s.own_info, s.own.data());
    commit_stats.hdf5_file_seconds = now() - t0;
    mine.digest = s.own_info.digest();
    mine.ok = 1;
  } catch (const CheckpointError& e) {
    error = e.what();
    log::error("HDF5 checkpoint of iteration {}: {}", s.iteration, e.what());
  }
  const auto reports = comm.gather(mine, 0);
  if (!agree(mine.ok)) {
    FX_THROW(
        CheckpointError,
        error.empty()
            ? fmt::format("HDF5 checkpoint of iteration {} failed on another rank (see its log)", s.iteration)
            : error);
  }
  int written = 1;
  if (r == 0) {
    try {
      detail::Manifest m;
      m.iteration = s.iteration;
      m.sequence = s.sequence;
      m.rank_count = size();
      for (int q = 0; q < size(); ++q) {
        const auto& rep = reports[static_cast<std::size_t>(q)];
        m.files.push_back({q, detail::rank_file_name(q), rep.bytes, rep.digest});
      }
      detail::write_manifest(dir, m);
      detail::remove_dirs(retired_dirs);  // everyone has had a cycle to delete their files
      retired_dirs = detail::retire_versions(root(), s.iteration, options.hdf5.keep);
      for (const auto& p : retired_dirs) log::debug("HDF5 retention retires {}", p.string());
    } catch (const CheckpointError& e) {
      written = 0;
      error = e.what();
      log::error("HDF5 checkpoint of iteration {}: {}", s.iteration, e.what());
    }
  }
  comm.bcast(&written, 1, 0);
  if (written) detail::remove_rank_files(root(), s.iteration, r);
  if (!written) {
    FX_THROW(CheckpointError, r == 0
                                  ? error
                                  : fmt::format("HDF5 checkpoint of iteration {}: rank 0 could not write the "
                                                "manifest (see its log)",
                                                s.iteration));
  }
}

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

}  // namespace

std::vector<detail::Manifest> DataStore::Impl::hdf5_manifests(int ranks, std::uint64_t& seen) {
  // Flat: per version iteration, sequence, then (bytes, xxh3) per rank.
  const std::size_t stride = 2 + 2 * static_cast<std::size_t>(ranks);
  std::vector<std::uint64_t> flat;
  std::uint64_t head[2] = {0, 0};  // values in `flat`, versions seen at all
  if (rank() == 0) {
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
  comm.bcast(head, 2, 0);
  flat.resize(head[0]);
  if (head[0] > 0) comm.bcast(flat.data(), flat.size(), 0);
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

int DataStore::Impl::hdf5_other_size(int ranks) {
  int other = 0;
  if (rank() == 0) {
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
  comm.bcast(&other, 1, 0);
  return other;
}

bool DataStore::Impl::load_hdf5(const detail::Manifest& m, Slot& slot) {
  const auto dir = root() / detail::version_dir_name(m.iteration);
  int ok = 1;
  try {
    slot.own_info = hdf5().read_rank_file(dir, m, rank(), members, slot.own);
  } catch (const CheckpointError& e) {
    ok = 0;
    log::warn("HDF5 version of iteration {} is unusable here: {}", m.iteration, e.what());
  }
  // Members are loaded only once every rank has read its file.
  if (comm.allreduce(ok, MPI_MIN) != 1) return false;
  try {
    detail::unpack_image(slot.own_info, slot.own.data(), members, dir.string(), &staging);
  } catch (const CheckpointError& e) {
    ok = 0;
    log::warn("{}", e.what());
  }
  return comm.allreduce(ok, MPI_MIN) == 1;
}

void DataStore::Impl::adopt(std::unique_ptr<Slot> slot, std::int64_t iteration, std::int64_t seq) {
  for (std::size_t i = versions.size(); i-- > 0;) retire(i);
  slot->iteration = iteration;
  slot->sequence = seq;
  slot->size = size();
  slot->own_ok = true;
  slot->committed = true;
  versions.push_back(std::move(slot));
  committed = iteration;
  sequence = seq;
  if (parity() || size() < 2)
    protect(*versions.back(), true);
  else
    protect_buddy(*versions.back(), true, true);
}

void DataStore::Impl::adopt_hdf5(const detail::Manifest& m, std::unique_ptr<Slot> slot, bool fallback,
                                 double since) {
  const double t = now();
  restore_steps.emplace_back("load", t - since);
  adopt(std::move(slot), m.iteration, m.sequence);
  restore_steps.emplace_back("adopt", now() - t);
  double total = 0;
  const std::string steps = restore_steps_text(total);
  log::debug("HDF5 restore on this rank: {:.2f} ms ({})", total * 1e3, steps);
  if (rank() != 0) return;
  if (options.hdf5.every > 0) detail::set_aside_newer_versions(root(), m.iteration);
  const auto dir = root() / detail::version_dir_name(m.iteration);
  const std::string text = fmt::format("restored iteration {} from HDF5 ({}) in {:.2f} ms ({})", m.iteration,
                                       dir.string(), total * 1e3, steps);
  if (fallback)
    log::warn("{}", text);
  else
    log::info("cold restart: {}", text);
}

std::optional<std::int64_t> DataStore::Impl::restore_hdf5(bool fallback) {
  settle_background();  // a failed memory restore may have left copies running
  const double t0 = now();
  std::uint64_t seen = 0;
  for (const auto& m : hdf5_manifests(size(), seen)) {
    auto slot = spare_slot();
    if (load_hdf5(m, *slot)) {
      adopt_hdf5(m, std::move(slot), fallback, t0);
      return m.iteration;
    }
    if (rank() == 0) {
      log::warn("skipping HDF5 version {}: unusable on at least one rank",
                (root() / detail::version_dir_name(m.iteration)).string());
    }
    if (pool.empty()) pool.push_back(std::move(slot));
  }
  if (seen > 0 && options.hdf5.on_unusable == UnusablePolicy::stop) {
    FX_THROW(CheckpointLost, fmt::format("none of the HDF5 versions under {} is usable and "
                                         "checkpoint.hdf5.on_unusable is 'stop'",
                                         root().string()));
  }
  return std::nullopt;
}

}  // namespace fx
