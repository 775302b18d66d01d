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
#include <utility>

#include "dir_claim.hpp"
#include "level.hpp"
#include "node_files.hpp"

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
// Its markers first: a version half deleted is never taken for complete.
void drop_markers(const fs::path& version) {
  std::error_code ec;
  for (fs::directory_iterator it(version, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_marker(it->path())) fs::remove(it->path(), ec);
  }
}

void remove_version(const fs::path& version) {
  drop_markers(version);
  std::error_code ec;
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

// Rank q's image among `inventory` (one rank's slots) for the plan's
// version: its own copy first, else a held one; nullptr when neither.
const detail::SlotSummary* copy_of(const std::vector<detail::SlotSummary>& inventory,
                                   const detail::PriorPlan& plan, int q) {
  const detail::SlotSummary* held = nullptr;
  for (const auto& s : inventory) {
    if (s.iteration != plan.iteration || s.size != plan.old_size) continue;
    if (s.own_rank == q) return &s;
    if (s.held_rank == q) held = &s;
  }
  return held;
}

// The rank holding a copy of q's image with the fewest reads so far, or
// slots.size() when none holds one.
std::size_t least_busy_holder(const std::vector<std::vector<detail::SlotSummary>>& slots,
                              const detail::PriorPlan& plan, int q, const std::vector<int>& reads) {
  std::size_t best = slots.size();
  for (std::size_t p = 0; p < slots.size(); ++p) {
    if (copy_of(slots[p], plan, q) && (best == slots.size() || reads[p] < reads[best])) best = p;
  }
  return best;
}

// plan_prior has the lowest rank holding a copy read each image; here a
// rank holding a copy of its own image reads it itself (nothing to send),
// and the rest are spread over the ranks holding copies, fewest reads first.
void spread_readers(const std::vector<std::vector<detail::SlotSummary>>& slots, detail::PriorPlan& plan) {
  std::vector<int> reads(slots.size(), 0);
  auto assign = [&](int q, std::size_t p) {
    const detail::SlotSummary& s = *copy_of(slots[p], plan, q);
    auto& d = plan.sources[static_cast<std::size_t>(q)];
    d.holder = static_cast<int>(p);
    d.own = s.own_rank == q;
    d.bytes = d.own ? s.own_bytes : s.held_bytes;
    ++reads[p];
  };
  std::vector<int> rest;
  for (int q = 0; q < plan.old_size; ++q) {
    const auto p = static_cast<std::size_t>(q);
    if (p < slots.size() && copy_of(slots[p], plan, q))
      assign(q, p);
    else
      rest.push_back(q);
  }
  for (const int q : rest) {
    const std::size_t best = least_busy_holder(slots, plan, q, reads);
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

class NodeLevel final : public detail::StorageLevel<NodeCheckpointConfig> {
 public:
  // The directory is named here, on the app's thread: write() runs on the
  // store's writer thread, which makes no MPI call (host_name() does).
  NodeLevel(detail::LevelContext& ctx, const NodeCheckpointConfig& o) : StorageLevel(ctx, o) {
    if (!on()) return;
    root_ = root();
    claim_ = detail::DirectoryClaim(root_, {"checkpoint.node.directory", o.directory}, detail::job_token(),
                                    kClaimWaitS);
  }
  CheckpointLevel id() const override { return CheckpointLevel::node; }
  const char* name() const override { return "node-local storage"; }
  double& seconds(CheckpointStats& st) const override { return st.node_seconds; }

  std::string write(const Slot& s, CheckpointStats& st) override;
  // Under parity the partner copy is an image exchanged in write_files().
  bool write_exchanges() const override { return o_.partner && ctx_.parity() && ctx_.size() > 1; }
  void post_publish(const Slot&, const detail::KeepContext& c, detail::Transfer&) override {
    c.fault(StorePoint::node_write);
  }
  void conclude_publish(Slot& s, bool all_wrote, const std::string& error) override;
  // A synchronous commit deletes what retention dropped at once.
  bool publish(Slot& s, const detail::KeepContext& c, const std::string& error) override {
    StorageLevel::publish(s, c, error);
    remove_doomed();
    return true;
  }

  bool reads(const detail::RestoreFacts& f) const override {
    return !f.plan.fresh && on() && (f.plan.history || f.restart);
  }
  void open(const detail::RestoreFacts& f) override;
  std::int64_t next() const override { return plan_.iteration; }
  bool load() override;
  void set_aside_above(std::int64_t iteration) override { drop_above(iteration); }
  // The images this rank's files hold go to the ranks that want them.
  void read_prior(const detail::StoredPrior& p, const detail::PriorRequest& r,
                  detail::PriorPieces& pieces) override {
    pieces.error = load_prior(p, pieces.local);
    ctx_.fetch_prior(p, r, pieces);
  }
  // Of any size, whichever level it came from.
  void after_resized(std::int64_t iteration, bool) override { drop_above(iteration); }
  bool lost(std::vector<int>& ranks) const override {
    ranks = lost_;
    return !lost_.empty() || !damaged_.empty();
  }
  std::string give_up() const override;
  std::optional<detail::StoredPrior> prior() override;
  // After a shrink that lost an image in memory: the files the old size
  // wrote (on a single host, or a host that lived, a rank's death leaves
  // them; partner copies those of a lost host).
  bool covers_lost_memory() const override { return true; }
  std::optional<detail::StoredPrior> prior_of_size(int old_size, std::string& why) override;

 private:
  fs::path root() const;          // the directory, {host} replaced
  fs::path root_;                 // root(), named when the level is made
  detail::DirectoryClaim claim_;  // this job's, on root_, for the level's life
  // A relaunch may begin while the last attempt's processes still end.
  static constexpr double kClaimWaitS = 5;
  std::vector<fs::path> doomed_;  // versions retention dropped: their files, deleted by the next write()
  // Versions above `iteration` in this rank's directory are an abandoned
  // future, or failed their checks: moved aside when marked, removed when
  // not (not collective).
  void drop_above(std::int64_t iteration);
  // Who holds what: the plan of restore_resized, with the node files as
  // their own images and held copies (the lowest rank that has one reads
  // it); `slots` gets every rank's inventory. Collective.
  detail::PriorPlan plan(const std::vector<NodeFile>& files,
                         std::vector<std::vector<detail::SlotSummary>>& slots);
  // The newest version among `files` complete on the live hosts, or
  // nullopt and the images missing (`lost`, empty when none). Collective.
  std::optional<detail::StoredPrior> complete_prior(std::vector<NodeFile> files, std::string& lost);
  // The old images of `p` this rank reads, mapped into `local` by old rank;
  // the reason when one could not be (its buffer is then zeros, sent all
  // the same: the receivers wait for it, and their checks fail).
  std::string load_prior(const detail::StoredPrior& p, std::map<int, detail::Buffer>& local);
  detail::Buffer exchange_partner(const Slot& s);
  void write_files(const Slot& s, std::string& error);
  void retain(const fs::path& dir, std::int64_t iteration);
  void remove_doomed();  // the files of the versions retention dropped
  // One planned version: every image from the rank that reads it, checked
  // and unpacked by its rank. Returns the ranks whose image failed (the
  // same list everywhere; empty: restored and adopted).
  std::vector<int> load_version();
  void fetch(Slot& slot);
  // The reason in `why` when this rank's image fails its checks.
  bool unpack(Slot& slot, std::string& why) const;
  // The copies of `failed` go from the plan (ranks of a host share their
  // files), which is made again: other copies, or an older version.
  void forget(const std::vector<int>& failed);
  void log_restore(double seconds) const;

  fs::path dir_;             // the version write() wrote into
  detail::Manifest marker_;  // and the marker's entries for it
  bool fallback_ = false;    // during a run (else a cold restart)
  double t0_ = 0;
  std::vector<NodeFile> files_;                          // this rank's
  std::vector<std::vector<detail::SlotSummary>> slots_;  // every rank's inventory
  detail::PriorPlan plan_;
  std::vector<std::string> hosts_;     // gathered at the first failure
  std::vector<int> lost_;              // the newest version's ranks found nowhere
  std::vector<std::int64_t> damaged_;  // versions an image of which failed its checks, newest first
};

fs::path NodeLevel::root() const {
  if (!root_.empty()) return root_;
  std::string dir = o_.directory;
  const std::string host = detail::host_name().data();
  for (std::size_t at = dir.find("{host}"); at != std::string::npos;
       at = dir.find("{host}", at + host.size()))
    dir.replace(at, 6, host);
  return dir;
}

void NodeLevel::drop_above(std::int64_t iteration) {
  if (!on()) return;
  const fs::path dir = root();
  for (const auto& v : detail::list_versions(dir)) {
    if (v.iteration > iteration) discard_version(dir, v.path);
  }
}

detail::PriorPlan NodeLevel::plan(const std::vector<NodeFile>& files,
                                  std::vector<std::vector<detail::SlotSummary>>& slots) {
  slots = ctx_.exchange_summaries(summaries(files));
  if (slots.empty()) return {};
  return detail::plan_prior(slots, 0);
}

std::string NodeLevel::load_prior(const detail::StoredPrior& p, std::map<int, detail::Buffer>& local) {
  std::string error;
  const int r = ctx_.rank();
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

detail::Buffer NodeLevel::exchange_partner(const Slot& s) {
  const int n = ctx_.size();
  const int r = ctx_.rank();
  const int dest = detail::buddy_of(r, n, ctx_.buddy_distance());
  const int src = detail::buddy_source(r, n, ctx_.buddy_distance());
  const std::uint64_t out = s.own_ok ? s.own_info.total_bytes : 0;
  std::uint64_t in = 0;
  ctx_.comm().sendrecv(&out, 1, dest, &in, 1, src, detail::kTagSize);
  detail::Buffer image;
  try {
    detail::Transfer t = ctx_.transfer();
    if (in > 0) image.reset(in);
    t.exchange(s.own.data(), out, dest, image.data(), in, src, detail::kTagNodePartner);
    t.wait();
  } catch (...) {
    ctx_.keep_until_drained(std::move(image));  // the receive may still write it
    throw;
  }
  return image;
}

// This rank's image and partner copy into the version's directory; the
// marker's entries for them. Under parity no rank holds another's image:
// the partner copy comes from an exchange of images with the rank a buddy
// distance away (on another host when there is one), freed once written so
// that parity keeps its smaller memory.
void NodeLevel::write_files(const Slot& s, std::string& error) {
  const int r = s.own_info.rank;  // no MPI call: it may run on the store's thread
  // A process failure here is repaired like any other in a commit.
  const detail::Buffer exchanged =
      o_.partner && ctx_.parity() && s.size > 1 ? exchange_partner(s) : detail::Buffer();
  try {
    dir_ = detail::make_version_dir(root(), s.iteration);
    detail::write_file_durably(dir_ / own_file(r), s.own.data(), s.own_info.total_bytes);
    marker_.files.push_back({r, own_file(r), s.own_info.total_bytes, s.own_info.digest()});
    const detail::Buffer* copy = exchanged.size() > 0      ? &exchanged
                                 : o_.partner && s.held_ok ? &s.held
                                                           : nullptr;
    if (copy) {
      const auto held = detail::read_header(copy->data(), copy->size(), copy->size(), "partner copy");
      detail::write_file_durably(dir_ / partner_file(r), copy->data(), copy->size());
      marker_.files.push_back({held.rank, partner_file(r), copy->size(), held.digest()});
    }
  } catch (const CheckpointError& e) {
    error = e.what();
    log::error("node-local checkpoint of iteration {}: {}", s.iteration, e.what());
  }
}

// Every rank writes its files; once all agree they did, each writes its
// marker (which makes its files part of the version) and applies retention
// to its directory.
void NodeLevel::remove_doomed() {
  for (const auto& v : std::exchange(doomed_, {})) {
    log::debug("node level: removing {}", v.string());
    remove_version(v);
  }
}

std::string NodeLevel::write(const Slot& s, CheckpointStats&) {
  remove_doomed();
  marker_ = detail::Manifest();
  marker_.iteration = s.iteration;
  marker_.sequence = s.sequence;
  marker_.rank_count = s.size;
  std::string error;
  write_files(s, error);
  return error;
}

void NodeLevel::conclude_publish(Slot& s, bool all_wrote, const std::string& error) {
  if (!all_wrote) {
    FX_THROW(CheckpointError,
             error.empty()
                 ? fmt::format("node-local checkpoint of iteration {} failed on another rank (see its log)",
                               s.iteration)
                 : error);
  }
  // A marker lost here costs only this rank's files: its partner copy
  // elsewhere may still complete the version.
  try {
    detail::write_manifest(dir_, marker_, marker_file(ctx_.rank()));
  } catch (const CheckpointError& e) {
    log::warn("node-local checkpoint of iteration {}: {}", s.iteration, e.what());
    return;
  }
  retain(root(), s.iteration);
}

// Retention: the newest `keep` versions with markers up to this one; older
// unmarked ones belong to a write cut short. Every rank of a host decides
// alike on the same directory.
void NodeLevel::retain(const fs::path& dir, std::int64_t iteration) {
  int kept = 1;
  for (const auto& v : detail::list_versions(dir)) {
    if (v.iteration == iteration) continue;
    if (v.iteration < iteration && kept < o_.keep && has_marker(v.path)) {
      ++kept;
      continue;
    }
    // A newer one may be a peer's on this host, writing the next commit
    // already (asynchronous commits); an abandoned future went aside at
    // the restore that abandoned it (set_aside_above).
    if (v.iteration > iteration) continue;
    // No longer a version at once; its files go at the next write, on the
    // writer thread of an asynchronous commit (deleting them is not free).
    drop_markers(v.path);
    doomed_.push_back(v.path);
  }
}

void NodeLevel::open(const detail::RestoreFacts& f) {
  fallback_ = f.plan.history;
  t0_ = now();
  slots_.clear();
  hosts_.clear();
  lost_.clear();
  damaged_.clear();
  files_ = scan_node_files(root(), ctx_.size());
  const double t1 = now();
  ctx_.step("scan", t1 - t0_);
  plan_ = plan(files_, slots_);
  ctx_.step("plan", now() - t1);
  if (plan_.iteration >= 0 || plan_.old_size == 0) return;
  if (!plan_.lost.empty()) lost_ = plan_.lost.front().ranks;
  if (ctx_.rank() == 0) {
    log::warn("node-local storage holds no complete version on the live hosts (missing: {})",
              detail::lost_text(plan_, "rank(s)"));
  }
}

// Newest first, version by version: a version some image of which fails
// its checks is planned again without that copy (a partner copy may
// complete it), else the walk goes on to the next older one. Versions above
// the one restored go aside, never deleted (set_aside_above).
bool NodeLevel::load() {
  spread_readers(slots_, plan_);
  const std::vector<int> failed = load_version();
  if (failed.empty()) return true;
  if (damaged_.empty() || damaged_.back() != plan_.iteration) damaged_.push_back(plan_.iteration);
  forget(failed);
  return false;
}

void NodeLevel::forget(const std::vector<int>& failed) {
  const int r = ctx_.rank();
  if (hosts_.empty()) hosts_ = ctx_.gather_hosts();
  std::vector<std::string> copies;
  for (const int q : failed) {
    const auto& s = plan_.sources[static_cast<std::size_t>(q)];
    const std::string& host = hosts_[static_cast<std::size_t>(s.holder)];
    copies.push_back(fmt::format("rank {}'s {} on {}", q, s.own ? "image" : "partner copy", host));
    for (std::size_t p = 0; p < slots_.size(); ++p)
      if (hosts_[p] == host) forget_node_copy(slots_[p], plan_.iteration, q, s.own);
    if (hosts_[static_cast<std::size_t>(r)] == host) forget_node_file(files_, plan_.iteration, q, s.own);
  }
  const std::int64_t it = plan_.iteration;
  plan_ = detail::plan_prior(slots_, 0);
  if (r == 0)
    log::warn("node-local version of iteration {} failed its checks ({}); {}", it, fmt::join(copies, ", "),
              plan_.iteration == it  ? std::string("trying the other copies")
              : plan_.iteration >= 0 ? fmt::format("trying iteration {}", plan_.iteration)
                                     : std::string("no older version is complete"));
}

std::vector<int> NodeLevel::load_version() {
  ctx_.advise_fresh_members();  // a relaunched process: nothing touched them yet
  auto slot = ctx_.spare_slot();
  fetch(*slot);
  double last = now();
  auto mark = [&](const char* step) {
    const double t = now();
    ctx_.step(step, t - last);
    last = t;
  };
  // Checks fail locally; the agreement below makes the verdict common.
  std::string why;
  const bool ok = unpack(*slot, why);
  mark("unpack");
  const bool agreed = ctx_.agree(ok);
  mark("agree");
  if (!agreed) {
    ctx_.give_back(std::move(slot));
    // Which images failed: a failure here is repaired like any other.
    const auto oks = ctx_.comm().allgather<int>(ok ? 1 : 0);
    std::vector<int> failed;
    for (int q = 0; q < ctx_.size(); ++q)
      if (oks[static_cast<std::size_t>(q)] == 0) failed.push_back(q);
    // The first failing rank's reason stands for the rest (rank 0 names
    // every copy next): one line per version, not one per rank.
    if (!ok && failed.front() == ctx_.rank())
      log::warn("{}", why);
    else if (!ok)
      log::debug("{}", why);
    return failed;
  }
  ctx_.adopt(std::move(slot), plan_.iteration, plan_.sequence);
  mark("adopt");
  log_restore(now() - t0_);
  return {};
}

// This rank's image into `slot`, from its own file or the rank that reads
// it, and the images this rank reads sent to their ranks.
void NodeLevel::fetch(Slot& slot) {
  const int r = ctx_.rank();
  const double t0 = now();
  const auto& me = plan_.sources[static_cast<std::size_t>(r)];
  std::vector<detail::Buffer> sent;
  try {
    detail::Transfer t = ctx_.transfer();
    if (me.holder != r) {
      slot.own.reset(me.bytes);
      t.recv(slot.own.data(), me.bytes, me.holder, detail::kTagNode);
    }
    const double t1 = now();
    ctx_.step("buffers", t1 - t0);
    double mapping = 0;
    for (int q = 0; q < ctx_.size(); ++q) {
      const auto& s = plan_.sources[static_cast<std::size_t>(q)];
      if (s.holder != r) continue;
      detail::Buffer& b = q == r ? slot.own : sent.emplace_back();
      const double tm = now();
      if (const std::string why = map_planned(files_, plan_, q, b); !why.empty()) log::warn("{}", why);
      mapping += now() - tm;  // zeros on failure: the receiver's checks fail
      if (q != r) t.send(b.data(), s.bytes, q, detail::kTagNode);
    }
    ctx_.step("map", mapping);
    t.wait();
    ctx_.step("transfer", now() - t1 - mapping);
  } catch (...) {
    ctx_.keep_until_drained(sent);  // transfers may still use them
    ctx_.keep_until_drained(std::move(slot.own));
    throw;
  }
}

bool NodeLevel::unpack(Slot& slot, std::string& why) const {
  const int n = ctx_.size();
  const int r = ctx_.rank();
  const std::int64_t it = plan_.iteration;
  const std::string what = fmt::format("node-local image of iteration {}", it);
  try {
    slot.own_info = detail::read_header(slot.own.data(), slot.own.size(), slot.own.size(), what);
    if (slot.own_info.iteration != it || slot.own_info.rank != r || slot.own_info.size != n) {
      FX_THROW(CheckpointError, fmt::format("{}: holds iteration {} of rank {} of {}", what,
                                            slot.own_info.iteration, slot.own_info.rank, slot.own_info.size));
    }
    ctx_.unpack(slot.own_info, slot.own.data(), what);
  } catch (const CheckpointError& e) {
    why = e.what();
    return false;
  }
  return true;
}

void NodeLevel::log_restore(double seconds) const {
  double total = 0;
  const std::string steps = ctx_.steps_text(total);
  log::debug("node-local restore on this rank: {:.2f} ms ({})", seconds * 1e3, steps);
  if (ctx_.rank() != 0) return;
  const int n = ctx_.size();
  int own = 0, moved = 0;
  for (int q = 0; q < n; ++q) {
    own += plan_.sources[static_cast<std::size_t>(q)].own;
    moved += plan_.sources[static_cast<std::size_t>(q)].holder != q;
  }
  const std::string text = fmt::format(
      "restored iteration {} from node-local storage ({} own images, {} partner copies; {} sent from "
      "another rank) in {:.2f} ms ({})",
      plan_.iteration, own, n - own, moved, seconds * 1e3, steps);
  if (fallback_)
    log::warn("{}", text);
  else
    log::info("cold restart: {}", text);
}

// Node-local versions were found and every one failed its checks:
// checkpoint.node.on_unusable decides (the versions go aside either way).
std::string NodeLevel::give_up() const {
  if (damaged_.empty()) return "";
  return unusable(
      fmt::format("no node-local version is usable on the live hosts (iteration(s) {} failed their checks)",
                  fmt::join(damaged_, ", ")),
      "node", true);
}

std::optional<detail::StoredPrior> NodeLevel::complete_prior(std::vector<NodeFile> files, std::string& lost) {
  detail::StoredPrior p;
  p.files = std::move(files);
  std::vector<std::vector<detail::SlotSummary>> slots;
  p.plan = plan(p.files, slots);
  if (p.plan.iteration < 0) {
    lost = detail::lost_text(p.plan, "old rank(s)");
    return std::nullopt;
  }
  spread_readers(slots, p.plan);
  p.from = this;
  p.iteration = p.plan.iteration;
  p.sequence = p.plan.sequence;
  p.old_size = p.plan.old_size;
  return p;
}

std::optional<detail::StoredPrior> NodeLevel::prior() {
  std::string lost;
  auto p = complete_prior(scan_node_files(root(), ctx_.size(), false), lost);
  if (!p && !lost.empty() && ctx_.rank() == 0) {
    log::warn(
        "node-local storage holds no complete version of another job size on the live hosts (missing: {})",
        lost);
  }
  return p;
}

std::optional<detail::StoredPrior> NodeLevel::prior_of_size(int old_size, std::string& why) {
  if (!on()) {
    why = "node-local storage is off (checkpoint.node.every = 0)";
    return std::nullopt;
  }
  std::string lost;
  auto p = complete_prior(scan_node_files(root(), old_size, true), lost);
  if (!p) {
    why = lost.empty() ? fmt::format("node-local storage holds no version written by {} ranks", old_size)
                       : fmt::format("node-local storage on the live hosts misses {}", lost);
  }
  return p;
}

}  // namespace

std::unique_ptr<detail::Level> detail::node_level(LevelContext& ctx, const CheckpointConfig& o) {
  return std::make_unique<NodeLevel>(ctx, o.node);
}

}  // namespace fx
