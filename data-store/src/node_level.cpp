// The node-local level (SCR's second level): every node.every-th commit,
// each rank also writes its image, and the buddy copy it holds (which the
// buddy distance puts on another host), to a directory on its own host.
// After a relaunch that lost a host, restore() finds every old rank's
// image on the live hosts and each goes from the rank that reads it to the
// rank that needs it:
//
//   <dir>/iter-000000000040/rank-000003.img      rank 3's image
//   <dir>/iter-000000000040/partner-000003.img   the copy rank 3 held (of rank 1, say)
//   <dir>/iter-000000000040/rank-000003.marker   what rank 3 holds, written once
//                                                every rank wrote its files
//
// Several ranks of a host share the directory; a file without a marker is
// ignored.
#include <fx/clock.hpp>
#include <fx/log.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "node_files.hpp"
#include "store_impl.hpp"

namespace fx {
namespace fs = std::filesystem;
using detail::NodeFile;
using detail::Slot;

namespace {

using detail::is_marker;
using detail::load_node_file;
using detail::marker_file;
using detail::own_file;
using detail::partner_file;
using detail::scan_node_files;

bool has_marker(const fs::path& version) {
  std::error_code ec;
  for (fs::directory_iterator it(version, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_marker(it->path())) return true;
  }
  return false;
}

// Markers first: a version half removed (another rank of the host removes
// it at the same time, or this one stops) is incomplete, never read.
void remove_version(const fs::path& version) {
  std::error_code ec;
  for (fs::directory_iterator it(version, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_marker(it->path())) fs::remove(it->path(), ec);
  }
  fs::remove_all(version, ec);
}

// A version above the one in use: with a marker it looked complete (it
// failed its checks, or belongs to a run abandoned at a later iteration)
// and goes aside, never deleted; without one it is a write cut short.
void discard_version(const fs::path& root, const fs::path& version) {
  if (!has_marker(version)) {
    remove_version(version);
    return;
  }
  try {
    if (const auto to = detail::move_aside(root, version))
      log::warn("node level: moved version {} aside to {} (newer than the one in use)", version.string(),
                to->string());
  } catch (const CheckpointError& e) {
    log::warn("node level: {}", e.what());
  }
}

// The files as the inventory of what this rank holds: each its own image
// or a held copy, of the version and job size that wrote it.
std::vector<detail::SlotSummary> summaries(const std::vector<NodeFile>& files) {
  std::vector<detail::SlotSummary> mine;
  for (const auto& f : files) {
    detail::SlotSummary& s = mine.emplace_back();
    s.iteration = f.iteration;
    s.sequence = f.sequence;
    s.size = f.ranks;
    (f.own ? s.own_rank : s.held_rank) = f.rank;
    (f.own ? s.own_bytes : s.held_bytes) = f.bytes;
  }
  return mine;
}

// The file the plan has this rank read for image q of `plan` (its own
// image or a partner copy), mapped into `into`. On failure its reason, and
// zeros of the planned size in its place: the receiver waits for them, and
// its checks fail.
std::string map_planned(const std::vector<NodeFile>& files, const detail::PriorPlan& plan, int q,
                        detail::Buffer& into) {
  const auto& s = plan.sources[static_cast<std::size_t>(q)];
  try {
    const auto f = std::find_if(files.begin(), files.end(), [&](const NodeFile& x) {
      return x.iteration == plan.iteration && x.ranks == plan.old_size && x.rank == q && x.own == s.own;
    });
    if (f == files.end())
      FX_THROW(CheckpointError,
               fmt::format("node-local image of rank {} of iteration {}: not found here", q, plan.iteration));
    load_node_file(*f, into);
    return {};
  } catch (const CheckpointError& e) {
    into.reset(s.bytes);
    return e.what();
  }
}

// plan_prior has the lowest rank holding a copy read each image; here a
// rank holding a copy of its own image reads it itself (nothing to send),
// and the rest are spread over the ranks holding copies, fewest reads first.
void spread_readers(const std::vector<std::vector<detail::SlotSummary>>& slots, detail::PriorPlan& plan) {
  std::vector<int> reads(slots.size(), 0);
  auto copy_of = [&](std::size_t p, int q) -> const detail::SlotSummary* {
    const detail::SlotSummary* held = nullptr;
    for (const auto& s : slots[p]) {
      if (s.iteration != plan.iteration || s.size != plan.old_size) continue;
      if (s.own_rank == q) return &s;
      if (s.held_rank == q) held = &s;
    }
    return held;
  };
  auto assign = [&](int q, std::size_t p) {
    const detail::SlotSummary& s = *copy_of(p, q);
    auto& d = plan.sources[static_cast<std::size_t>(q)];
    d.holder = static_cast<int>(p);
    d.own = s.own_rank == q;
    d.bytes = d.own ? s.own_bytes : s.held_bytes;
    ++reads[p];
  };
  std::vector<int> rest;
  for (int q = 0; q < plan.old_size; ++q) {
    const auto p = static_cast<std::size_t>(q);
    if (p < slots.size() && copy_of(p, q))
      assign(q, p);
    else
      rest.push_back(q);
  }
  for (const int q : rest) {
    std::size_t best = slots.size();
    for (std::size_t p = 0; p < slots.size(); ++p) {
      if (copy_of(p, q) && (best == slots.size() || reads[p] < reads[best])) best = p;
    }
    if (best < slots.size()) assign(q, best);
  }
}

// A copy of rank q's image that failed its checks, out of the inventory
// of a rank on its host (they share the file) and out of this rank's file
// list: a new plan does without it.
void forget_node_copy(std::vector<detail::SlotSummary>& inventory, std::int64_t iteration, int q, bool own) {
  inventory.erase(std::remove_if(inventory.begin(), inventory.end(),
                                 [&](const detail::SlotSummary& x) {
                                   return x.iteration == iteration && (own ? x.own_rank : x.held_rank) == q;
                                 }),
                  inventory.end());
}

void forget_node_file(std::vector<NodeFile>& files, std::int64_t iteration, int q, bool own) {
  files.erase(std::remove_if(
                  files.begin(), files.end(),
                  [&](const NodeFile& f) { return f.iteration == iteration && f.rank == q && f.own == own; }),
              files.end());
}

}  // namespace

bool DataStore::Impl::node_due(std::int64_t seq) const {
  return options.node.every > 0 && seq % options.node.every == 0;
}

fs::path DataStore::Impl::node_root() const {
  std::string dir = options.node.directory;
  const std::string host = detail::host_name().data();
  for (std::size_t at = dir.find("{host}"); at != std::string::npos;
       at = dir.find("{host}", at + host.size()))
    dir.replace(at, 6, host);
  return dir;
}

detail::Buffer DataStore::Impl::exchange_node_partner(const Slot& s) {
  const int n = size();
  const int r = rank();
  const int dest = detail::buddy_of(r, n, distance);
  const int src = detail::buddy_source(r, n, distance);
  const std::uint64_t out = s.own_ok ? s.own_info.total_bytes : 0;
  std::uint64_t in = 0;
  comm.sendrecv(&out, 1, dest, &in, 1, src, detail::kTagSize);
  detail::Buffer image;
  try {
    detail::Transfer t(comm, orphans);
    if (in > 0) image.reset(in);
    t.exchange(s.own.data(), out, dest, image.data(), in, src, detail::kTagNodePartner);
    t.wait();
  } catch (...) {
    orphan_buffers.push_back(std::move(image));  // the receive may still write it
    throw;
  }
  return image;
}

// Every rank writes its files; once all agree they did, each writes its
// marker (which makes its files part of the version) and applies retention
// to its directory.
void DataStore::Impl::write_node(Slot& s, const std::function<void()>& written) {
  const int r = rank();
  // A process failure here is repaired like any other in a commit.
  const detail::Buffer exchanged =
      options.node.partner && parity() && size() > 1 ? exchange_node_partner(s) : detail::Buffer();
  const fs::path root = node_root();
  detail::Manifest marker;
  marker.iteration = s.iteration;
  marker.sequence = s.sequence;
  marker.rank_count = size();
  fs::path dir;
  std::string error;
  try {
    dir = detail::make_version_dir(root, s.iteration);
    detail::write_file_durably(dir / own_file(r), s.own.data(), s.own_info.total_bytes);
    marker.files.push_back({r, own_file(r), s.own_info.total_bytes, s.own_info.digest()});
    const detail::Buffer* copy = exchanged.size() > 0                ? &exchanged
                                 : options.node.partner && s.held_ok ? &s.held
                                                                     : nullptr;
    if (copy) {
      const auto held = detail::read_header(copy->data(), copy->size(), copy->size(), "partner copy");
      detail::write_file_durably(dir / partner_file(r), copy->data(), copy->size());
      marker.files.push_back({held.rank, partner_file(r), copy->size(), held.digest()});
    }
  } catch (const CheckpointError& e) {
    error = e.what();
    log::error("node-local checkpoint of iteration {}: {}", s.iteration, e.what());
  }
  written();
  if (!agree(error.empty() ? 1 : 0)) {
    FX_THROW(CheckpointError,
             error.empty()
                 ? fmt::format("node-local checkpoint of iteration {} failed on another rank (see its log)",
                               s.iteration)
                 : error);
  }
  // A marker lost here costs only this rank's files: its partner copy
  // elsewhere may still complete the version.
  try {
    detail::write_manifest(dir, marker, marker_file(r));
  } catch (const CheckpointError& e) {
    log::warn("node-local checkpoint of iteration {}: {}", s.iteration, e.what());
    return;
  }
  // Retention: the newest `keep` versions with markers; versions above this
  // one belong to an abandoned future, older unmarked ones to a write cut
  // short. Every rank of a host decides alike on the same directory.
  int kept = 1;
  for (const auto& v : detail::list_versions(root)) {
    if (v.iteration == s.iteration) continue;
    if (v.iteration < s.iteration && kept < options.node.keep && has_marker(v.path)) {
      ++kept;
      continue;
    }
    if (v.iteration > s.iteration) {
      discard_version(root, v.path);
      continue;
    }
    log::debug("node level: removing {}", v.path.string());
    remove_version(v.path);
  }
}

void DataStore::Impl::drop_node_above(std::int64_t iteration) {
  if (options.node.every <= 0) return;
  const fs::path root = node_root();
  for (const auto& v : detail::list_versions(root)) {
    if (v.iteration > iteration) discard_version(root, v.path);
  }
}

// Who holds what: the plan of restore_resized, with the node files as
// their own images and held copies (the lowest rank that has one reads
// it); `slots` gets every rank's inventory. Collective.
detail::PriorPlan DataStore::Impl::plan_node(const std::vector<NodeFile>& files,
                                             std::vector<std::vector<detail::SlotSummary>>& slots) {
  const auto mine = summaries(files);
  const auto k = comm.allreduce<std::uint64_t>(mine.size(), MPI_MAX);
  if (k == 0) return {};
  for (auto& i : exchange_summaries(mine, k, false)) slots.push_back(std::move(i.slots));
  return detail::plan_prior(slots, 0);
}

std::optional<detail::StoredPrior> DataStore::Impl::node_prior() {
  detail::StoredPrior p;
  p.files = scan_node_files(node_root(), size(), false);
  std::vector<std::vector<detail::SlotSummary>> slots;
  p.plan = plan_node(p.files, slots);
  if (p.plan.iteration < 0) {
    if (!p.plan.lost.empty() && rank() == 0) {
      log::warn(
          "node-local storage holds no complete version of another job size on the live hosts "
          "(missing: {})",
          detail::lost_text(p.plan, "old rank(s)"));
    }
    return std::nullopt;
  }
  spread_readers(slots, p.plan);
  p.level = CheckpointLevel::node;
  return p;
}

std::string DataStore::Impl::load_node_prior(const detail::StoredPrior& p,
                                             std::map<int, detail::Buffer>& local) {
  std::string error;
  const int r = rank();
  for (int q = 0; q < p.plan.old_size; ++q) {
    const auto& s = p.plan.sources[static_cast<std::size_t>(q)];
    if (s.holder != r) continue;
    const std::string why = map_planned(p.files, p.plan, q, local[q]);
    if (why.empty()) continue;
    log::error("restore after the relaunch: {}", why);
    if (error.empty()) error = why;
  }
  return error;
}

// Newest first, version by version: a version some image of which fails
// its checks is planned again without that copy (a partner copy may
// complete it), else the next older one is tried. Versions above the one
// restored go aside, never deleted (drop_node_above).
std::optional<std::int64_t> DataStore::Impl::restore_node(bool fallback, std::int64_t at_least) {
  settle_background();  // a failed memory restore may have left copies running
  const double t0 = now();
  const int r = rank();
  node_lost.clear();
  node_damaged.clear();
  auto files = scan_node_files(node_root(), size());
  const double t1 = now();
  restore_steps.emplace_back("scan", t1 - t0);
  std::vector<std::vector<detail::SlotSummary>> slots;
  detail::PriorPlan plan = plan_node(files, slots);
  restore_steps.emplace_back("plan", now() - t1);
  if (plan.old_size == 0) return std::nullopt;
  std::vector<std::string> hosts;  // gathered at the first failure: ranks of a host share their files
  while (plan.iteration >= 0 && plan.iteration >= at_least) {
    spread_readers(slots, plan);
    const std::vector<int> failed = load_node_version(files, plan, fallback, t0);
    if (failed.empty()) return plan.iteration;
    if (node_damaged.empty() || node_damaged.back() != plan.iteration) node_damaged.push_back(plan.iteration);
    if (hosts.empty()) hosts = gather_hosts();
    std::vector<std::string> copies;
    for (const int q : failed) {
      const auto& s = plan.sources[static_cast<std::size_t>(q)];
      const std::string& host = hosts[static_cast<std::size_t>(s.holder)];
      copies.push_back(fmt::format("rank {}'s {} on {}", q, s.own ? "image" : "partner copy", host));
      for (std::size_t p = 0; p < slots.size(); ++p)
        if (hosts[p] == host) forget_node_copy(slots[p], plan.iteration, q, s.own);
      if (hosts[static_cast<std::size_t>(r)] == host) forget_node_file(files, plan.iteration, q, s.own);
    }
    const std::int64_t it = plan.iteration;
    plan = detail::plan_prior(slots, 0);
    if (r == 0)
      log::warn("node-local version of iteration {} failed its checks ({}); {}", it, fmt::join(copies, ", "),
                plan.iteration == it  ? std::string("trying the other copies")
                : plan.iteration >= 0 ? fmt::format("trying iteration {}", plan.iteration)
                                      : std::string("no older version is complete"));
  }
  if (plan.iteration < 0 && node_damaged.empty()) {
    if (!plan.lost.empty()) node_lost = plan.lost.front().second;
    if (r == 0) {
      log::warn("node-local storage holds no complete version on the live hosts (missing: {})",
                detail::lost_text(plan, "rank(s)"));
    }
  } else if (plan.iteration >= 0 && r == 0) {
    log::info("node-local version of iteration {} is older than HDF5's of iteration {}: HDF5 first",
              plan.iteration, at_least);
  }
  return std::nullopt;
}

// One planned version: every image from the rank that reads it, checked
// and unpacked by its rank. Returns the ranks whose image failed (the
// same list everywhere; empty: restored and adopted).
std::vector<int> DataStore::Impl::load_node_version(const std::vector<NodeFile>& files,
                                                    const detail::PriorPlan& plan, bool fallback, double t0) {
  double last = now();
  auto mark = [&](const char* step) {
    const double t = now();
    restore_steps.emplace_back(step, t - last);
    last = t;
  };
  const int n = size();
  const int r = rank();
  const std::int64_t it = plan.iteration;
  const auto& src = plan.sources;
  advise_fresh_members();  // a relaunched process: nothing touched them yet
  auto slot = spare_slot();
  std::vector<detail::Buffer> sent;
  bool ok = true;  // this rank's own image
  double mapping = 0;
  const std::string what = fmt::format("node-local image of iteration {}", it);
  const auto& me = src[static_cast<std::size_t>(r)];
  try {
    detail::Transfer t(comm, orphans);
    if (me.holder != r) {
      slot->own.reset(me.bytes);
      t.recv(slot->own.data(), me.bytes, me.holder, detail::kTagNode);
    }
    mark("buffers");
    for (int q = 0; q < n; ++q) {
      const auto& s = src[static_cast<std::size_t>(q)];
      if (s.holder != r) continue;
      detail::Buffer& b = q == r ? slot->own : sent.emplace_back();
      const double tm = now();
      if (const std::string why = map_planned(files, plan, q, b); !why.empty()) log::warn("{}", why);
      mapping += now() - tm;  // zeros on failure: the receiver's checks fail
      if (q != r) t.send(b.data(), s.bytes, q, detail::kTagNode);
    }
    restore_steps.emplace_back("map", mapping);
    last += mapping;
    t.wait();
    mark("transfer");
  } catch (...) {
    keep_until_drained(sent);  // transfers may still use them
    orphan_buffers.push_back(std::move(slot->own));
    throw;
  }
  // Checks fail locally; the agreement below makes the verdict common.
  try {
    slot->own_info = detail::read_header(slot->own.data(), slot->own.size(), slot->own.size(), what);
    if (slot->own_info.iteration != it || slot->own_info.rank != r || slot->own_info.size != n) {
      FX_THROW(CheckpointError,
               fmt::format("{}: holds iteration {} of rank {} of {}", what, slot->own_info.iteration,
                           slot->own_info.rank, slot->own_info.size));
    }
    detail::unpack_image(slot->own_info, slot->own.data(), members, what, &staging);
  } catch (const CheckpointError& e) {
    log::warn("{}", e.what());
    ok = false;
  }
  mark("unpack");
  const bool agreed = agree(ok ? 1 : 0);
  mark("agree");
  if (!agreed) {
    if (pool.empty()) pool.push_back(std::move(slot));
    // Which images failed: a failure here is repaired like any other.
    const auto oks = comm.allgather<int>(ok ? 1 : 0);
    std::vector<int> failed;
    for (int q = 0; q < n; ++q)
      if (oks[static_cast<std::size_t>(q)] == 0) failed.push_back(q);
    return failed;
  }
  adopt(std::move(slot), it, plan.sequence);
  mark("adopt");
  drop_node_above(it);  // the versions that failed their checks
  log_node_restore(plan, fallback, now() - t0);
  return {};
}

void DataStore::Impl::log_node_restore(const detail::PriorPlan& plan, bool fallback, double seconds) {
  double total = 0;
  const std::string steps = restore_steps_text(total);
  log::debug("node-local restore on this rank: {:.2f} ms ({})", seconds * 1e3, steps);
  if (rank() != 0) return;
  const int n = size();
  int own = 0, moved = 0;
  for (int q = 0; q < n; ++q) {
    own += plan.sources[static_cast<std::size_t>(q)].own;
    moved += plan.sources[static_cast<std::size_t>(q)].holder != q;
  }
  const std::string text = fmt::format(
      "restored iteration {} from node-local storage ({} own images, {} partner copies; {} sent from "
      "another rank) in {:.2f} ms ({})",
      plan.iteration, own, n - own, moved, seconds * 1e3, steps);
  if (fallback)
    log::warn("{}", text);
  else
    log::info("cold restart: {}", text);
}

}  // namespace fx
