// The in-memory redundancy: buddy copies and XOR parity, at commit and at
// restore.
#include <fx/log.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "checksum.hpp"
#include "store_impl.hpp"
#include "xor.hpp"

namespace fx {

using detail::Slot;
using detail::Source;
using detail::Transfer;

bool DataStore::Impl::alone() {
  if (size() > 1) return false;
  if (!warned_alone) log::warn("a single rank has no buddy: in-memory checkpoints survive no failure");
  warned_alone = true;
  return true;
}

bool DataStore::Impl::protect(Slot& s, bool mine_ok) {
  if (alone()) return true;
  return parity() ? protect_parity(s, mine_ok) : protect_buddy(s, mine_ok, false);
}

// Send my image to the rank that holds my copy; receive the image of the
// rank whose copy I hold. Sizes first, so a rank with nothing to send (its
// pack failed) sends an empty size instead of leaving its buddy waiting.
// In the background, the copies travel while the application computes and
// the next flush() (or a restore) settles them; returns true then.
bool DataStore::Impl::protect_buddy(Slot& s, bool mine_ok, bool in_background) {
  const int n = size();
  const int r = rank();
  const int dest = detail::buddy_of(r, n, distance);
  const int src = detail::buddy_source(r, n, distance);
  const std::uint64_t out[2] = {mine_ok ? s.own_info.total_bytes : 0, s.own_info.payload_offset};
  std::uint64_t in[2] = {0, 0};
  comm.sendrecv(out, 2, dest, in, 2, src, detail::kTagSize);
  Transfer t(comm, orphans);
  s.held_ok = false;
  if (in[0] > 0) s.held.reset(in[0]);
  t.exchange(s.own.data(), out[0], dest, s.held.data(), in[0], src, detail::kTagImage);
  if (in_background && in[0] > 0) {
    Slot* sp = &s;
    background.push_back({t.release(), [sp, src, header = in[1]] { sp->hold(src, header); }});
    return true;
  }
  t.wait();
  if (in[0] == 0) return false;
  s.hold(src, in[1]);
  return true;
}

// Distributed XOR parity over a group of m ranks (parity_ring.hpp). Any
// one lost image is the XOR of the others' chunks and parities.
bool DataStore::Impl::protect_parity(Slot& s, bool mine_ok) {
  const auto sizes = comm.allgather<std::uint64_t>(mine_ok ? s.own_info.total_bytes : 0);
  const detail::ParityGroup g = detail::parity_group(rank(), size(), options.memory.parity_group);
  const auto first = sizes.begin() + g.first;
  const detail::ParityStripe p = detail::parity_stripe({first, first + g.count});
  if (p.stripe == 0) return false;
  detail::ParityRing ring;
  int rc = ring.start(comm.raw(), g, rank(), p.chunk, parity_buffers(s, p));
  bool done = false;
  if (rc == MPI_SUCCESS) rc = ring.advance(true, done);
  comm.check(orphan_on_error(ring.requests(), rc), "MPI_Wait (parity ring)", __FILE__, __LINE__);
  keep_parity(s, p);
  return true;
}

// The image padded to the stripe (zeros), and the ring's blocks.
detail::ParityRing::Buffers DataStore::Impl::parity_buffers(Slot& s, const detail::ParityStripe& p) {
  s.held_ok = false;
  s.held_rank = -1;
  s.parity_ok = false;
  s.own.grow(p.stripe);
  std::memset(s.own.data() + s.own_info.total_bytes, 0, p.stripe - s.own_info.total_bytes);
  scratch_a.reset(p.chunk);
  scratch_b.reset(p.chunk);
  s.held.reset(p.chunk);
  return {s.own.data(), s.held.data(), {scratch_a.data(), scratch_b.data()}};
}

void DataStore::Impl::keep_parity(Slot& s, const detail::ParityStripe& p) {
  s.parity_ok = true;
  s.stripe = p.stripe;
}

// A recovered or relaunched process's members are usually fresh, untouched
// allocations: huge pages make their first touch (by the unpack) several
// times cheaper than 4 KiB page faults.
void DataStore::Impl::advise_fresh_members() {
  for (const auto& m : members) {
    // A resizable member is reallocated to the version's extents first.
    if (m.host && !m.shape) detail::advise_huge_pages(m.host(), m.bytes);
  }
}

namespace {

// Runs `body` on this rank's version; false (logged) when it is missing or
// a check fails: the restore's agreement makes the verdict common.
template <class Body>
bool checked(const Slot* mine, const std::string& what, const Body& body) {
  try {
    if (!mine) FX_THROW(CheckpointError, fmt::format("{}: not found", what));
    body();
  } catch (const CheckpointError& e) {
    log::warn("{}", e.what());
    return false;
  }
  return true;
}

// What a rank restores from, for messages.
std::string restore_what(const detail::RankPlan& me, std::int64_t it) {
  return me.source == Source::own ? fmt::format("own copy of iteration {}", it)
         : me.source == Source::buddy
             ? fmt::format("copy of iteration {} received from rank {}", it, me.holder)
             : fmt::format("image of iteration {} rebuilt from parity", it);
}

// This rank's own, intact copy of iteration `it` at this size, or nullptr.
Slot* own_copy(const std::vector<std::unique_ptr<Slot>>& versions, std::int64_t it, int r, int size) {
  Slot* mine = nullptr;
  for (const auto& v : versions) {
    if (v->iteration == it && v->own_ok && v->own_info.rank == r && v->size == size) mine = v.get();
  }
  return mine;
}

// The header of an image received or rebuilt for rank r: it must be the
// version asked for.
void read_received_header(Slot& mine, std::int64_t it, int r, const std::string& what) {
  mine.own_info = detail::read_header(mine.own.data(), mine.own.size(), mine.own.size(), what);
  if (mine.own_info.iteration != it || mine.own_info.rank != r) {
    FX_THROW(CheckpointError, fmt::format("{}: holds iteration {} of rank {}", what, mine.own_info.iteration,
                                          mine.own_info.rank));
  }
  mine.sequence = mine.own_info.sequence;
}

}  // namespace

bool DataStore::Impl::restore_memory(const detail::RestorePlan& plan) {
  const int r = rank();
  const std::int64_t it = plan.iteration;
  const auto& me = plan.ranks[static_cast<std::size_t>(r)];
  const std::string what = restore_what(me, it);
  if (me.source != Source::own) advise_fresh_members();
  Slot* mine = me.source == Source::own ? own_copy(versions, it, r, size()) : nullptr;
  bool ok = true;
  bool me_direct = false;  // received straight into the members (pull_buddy)
  if (parity())
    rebuild_parity(plan, mine);
  else
    ok = restore_buddies(plan, mine, what, me_direct);
  if ((me.source != Source::own && !me_direct) || parity()) {
    ok = checked(mine, what,
                 [&] {
                   if (me.source != Source::own) read_received_header(*mine, it, r, what);
                   detail::unpack_image(mine->own_info, mine->own.data(), members, what, &staging,
                                        mine->own.pinned());
                   mine->own_ok = true;
                 }) &&
         ok;
  }
  // Re-protection once every rank has restored: planned here, posted by
  // start_reprotection() after the app's first step (or by the next
  // flush()), so that the copies do not run in this restore's last MPI
  // calls, on the recovered rank's time.
  const bool all_ok = agree(ok ? 1 : 0) != 0;
  if (all_ok && !parity()) plan_protect(plan);
  if (all_ok && parity() && plan.reencode_parity) protect_parity(*find(it), true);
  return all_ok;
}

// Post the pulls, load the own copy while the receivers copy (they pull
// the bytes themselves on one node), check the copies sent, then wait.
bool DataStore::Impl::restore_buddies(const detail::RestorePlan& plan, Slot*& mine, const std::string& what,
                                      bool& me_direct) {
  const auto& me = plan.ranks[static_cast<std::size_t>(rank())];
  bool ok = true;
  Transfer t(comm, orphans);
  detail::Pull pull = pull_buddy(plan, t, mine);
  if (me.source == Source::own) {
    ok = checked(mine, what, [&] {
      detail::unpack_image(mine->own_info, mine->own.data(), members, what, &staging, mine->own.pinned());
    });
    if (!ok && mine) mine->own_ok = false;  // damaged: the buddy's copy serves next time
  }
  if (!verify_sent(plan)) ok = false;
  t.wait();
  if (pull.direct) {
    ok = checked(mine, what, [&] { finish_pull(pull, *mine, what); }) && ok;
    me_direct = true;
  }
  return ok;
}

// A recovered rank receives its image from the rank holding its copy: the
// header block, then one message per member straight into the app's
// memory (members without host memory into the version slot, loaded from
// there), about one transfer of its data. The holder checks the copy's
// checksums meanwhile, and the rank's own copy of the version comes in the
// background (plan_own_copy). Both sides parse the same header, so they
// agree on the messages. Where the plan says otherwise (RankPlan::direct),
// the whole image goes into the slot and is unpacked, one message plus one
// copy.
detail::Pull DataStore::Impl::pull_buddy(const detail::RestorePlan& plan, Transfer& t, Slot*& mine) {
  const int n = size();
  const int r = rank();
  const std::int64_t it = plan.iteration;
  const auto& me = plan.ranks[static_cast<std::size_t>(r)];
  detail::Pull pull;
  if (me.source == Source::buddy) {
    Slot& s = slot_for(it, n);
    s.sequence = plan.sequence;
    mine = &s;
    s.own.reset(me.bytes, image_memory());
    if (!me.direct) {
      t.recv(s.own.data(), me.bytes, me.holder, detail::kTagPull);
    } else {
      pull = post_member_pulls(s, me, t);
    }
  }
  for (int q = 0; q < n; ++q) {
    const auto& rp = plan.ranks[static_cast<std::size_t>(q)];
    if (rp.source != Source::buddy || rp.holder != r) continue;
    Slot* s = find(it);
    if (!s || !s->held_ok || s->held_rank != q) {
      FX_THROW(CheckpointError,
               fmt::format("restore plan expects this rank to hold rank {}'s copy of iteration {}", q, it));
    }
    if (!rp.direct) {
      t.send(s->held.data(), s->held.size(), q, detail::kTagPull);
      continue;
    }
    t.send(s->held.data(), s->held_header, q, detail::kTagPull);
    try {
      const auto info = detail::read_header(s->held.data(), s->held_header, s->held.size(), "held copy");
      if (info.total_bytes != s->held.size()) continue;  // the receiver sees the same
      for (const auto& m : info.members)
        if (m.bytes > 0)
          t.send(s->held.data() + info.payload_offset + m.offset, m.bytes, q, detail::kTagPull);
    } catch (const CheckpointError&) {
      // The receiver cannot parse it either: it waits for nothing more.
    }
  }
  return pull;
}

// The recovered rank's side: the header first (both sides derive the member
// messages from it), then every member where it belongs.
detail::Pull DataStore::Impl::post_member_pulls(Slot& s, const detail::RankPlan& me, Transfer& t) {
  detail::Pull pull;
  {
    Transfer head(comm, orphans);
    head.recv(s.own.data(), me.header, me.holder, detail::kTagPull);
    head.wait();
  }
  pull.direct = true;
  const std::string what = fmt::format("copy received from rank {}", me.holder);
  try {
    pull.info = detail::read_header(s.own.data(), me.header, s.own.size(), what);
    if (pull.info.total_bytes != me.bytes)
      FX_THROW(CheckpointError,
               fmt::format("{}: image of {} bytes announced as {}", what, pull.info.total_bytes, me.bytes));
  } catch (const CheckpointError& e) {
    pull.error = e.what();
    return pull;
  }
  try {
    detail::fit_members(pull.info, members, what);
    pull.compatible = true;
  } catch (const CheckpointError& e) {
    pull.error = e.what();
  }
  std::byte* payload = s.own.data() + pull.info.payload_offset;
  for (std::size_t i = 0; i < pull.info.members.size(); ++i) {
    const auto& rec = pull.info.members[i];
    if (rec.bytes == 0) continue;
    // Host members straight into the app, device members into pinned
    // memory, whence finish_pull sends them to the device.
    const Member& m = members[i];
    std::byte* dst = !pull.compatible ? payload + rec.offset
                     : m.host         ? m.host()
                     : m.from_host    ? staging.buffer(i, rec.bytes)
                                      : payload + rec.offset;
    t.recv(dst, rec.bytes, me.holder, detail::kTagPull);
  }
  return pull;
}

// After the member messages: device members go from their pinned buffers
// to the device, members without either load from the slot (checked here);
// the holder checked what it sent into host and pinned memory.
void DataStore::Impl::finish_pull(const detail::Pull& pull, Slot& s, const std::string& what) {
  if (!pull.error.empty()) FX_THROW(CheckpointError, pull.error);
  const detail::ImageInfo& info = pull.info;
  if (info.iteration != s.iteration || info.rank != rank()) {
    FX_THROW(CheckpointError,
             fmt::format("{}: holds iteration {} of rank {}", what, info.iteration, info.rank));
  }
  bool staged = false;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& rec = info.members[i];
    if (members[i].from_host && rec.bytes > 0) {
      members[i].from_host(staging.space(), staging.buffer(i, rec.bytes));
      staged = true;
    }
  }
  if (staged) staging.fence();  // the app's next kernels read them
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (members[i].host || members[i].from_host) continue;
    const auto& rec = info.members[i];
    const std::byte* src = s.own.data() + info.payload_offset + rec.offset;
    if (detail::hash_bytes(rec.hash_kind, src, rec.bytes) != rec.hash)
      detail::throw_checksum_mismatch(what, rec.name);
    members[i].load(src);
  }
  s.sequence = info.sequence;
  s.own_info = info;  // own_ok once the own copy has arrived (plan_own_copy)
}

// The holder's side: the copies it sent straight into members, checked
// against their checksums while the receivers copy. False on a mismatch.
bool DataStore::Impl::verify_sent(const detail::RestorePlan& plan) {
  const int r = rank();
  bool ok = true;
  for (int q = 0; q < size(); ++q) {
    const auto& rp = plan.ranks[static_cast<std::size_t>(q)];
    if (!rp.direct || rp.holder != r) continue;
    const Slot* s = find(plan.iteration);
    const std::string what = fmt::format("copy of rank {}'s iteration {} held here", q, plan.iteration);
    try {
      detail::verify_payload(detail::read_header(s->held.data(), s->held_header, s->held.size(), what),
                             s->held.data(), what);
    } catch (const CheckpointError& e) {
      log::warn("{}", e.what());
      ok = false;
    }
  }
  return ok;
}

// Re-create missing buddy copies in the background (a recovered rank's,
// and the one a recovered rank should hold), and the own copy of a rank
// that received its members directly. The application resumes at once,
// MPI progresses the copies during its steps, and the next commit(),
// restore() or flush() completes them before relying on them.
void DataStore::Impl::plan_protect(const detail::RestorePlan& plan) {
  const int n = size();
  const int r = rank();
  const std::int64_t it = plan.iteration;
  for (int q = 0; q < n; ++q) {
    const auto& rp = plan.ranks[static_cast<std::size_t>(q)];
    if (rp.direct) plan_own_copy(plan, q);
    // Always from the own image: this rank's held copy may be the buffer
    // the receive side has just replaced.
    if (rp.protect_from == r) {
      Slot* s = find(it);
      if (q != r || !s || !s->own_ok) {
        FX_THROW(
            CheckpointError,
            fmt::format("restore plan expects this rank to have rank {}'s image of iteration {}", q, it));
      }
      deferred.push_back(
          {s->own.data(), s->own_info.total_bytes, rp.protect_to, detail::kTagProtect, true, {}});
    }
    if (rp.protect_to == r) {
      Slot& s = slot_for(it, n);
      s.sequence = plan.sequence;
      s.held_ok = false;
      s.held.reset(rp.bytes);
      Slot* sp = &s;
      deferred.push_back({s.held.data(), rp.bytes, rp.protect_from, detail::kTagProtect, false,
                          [sp, q, header = rp.header] { sp->hold(q, header); }});
    }
  }
}

// A rank that received its members directly gets its own copy of the
// version from the same holder: the whole image into its slot, which
// becomes its own copy once complete.
void DataStore::Impl::plan_own_copy(const detail::RestorePlan& plan, int q) {
  const auto& rp = plan.ranks[static_cast<std::size_t>(q)];
  Slot* s = find(plan.iteration);
  if (!s) return;
  if (rp.holder == rank()) {
    deferred.push_back({s->held.data(), s->held.size(), q, detail::kTagOwnCopy, true, {}});
  } else if (q == rank() && s->own_info.rank == q) {
    deferred.push_back(
        {s->own.data(), rp.bytes, rp.holder, detail::kTagOwnCopy, false, [s] { s->own_ok = true; }});
  }
}

void DataStore::Impl::start_deferred() {
  for (auto& d : deferred) {
    Transfer x(comm, orphans);
    if (d.send)
      x.send(d.data, d.bytes, d.peer, d.tag);
    else
      x.recv(d.data, d.bytes, d.peer, d.tag);
    background.push_back({x.release(), std::move(d.done)});
  }
  deferred.clear();
  start_deferred_statics();
}

// Parity: the one rank of a group without its image gets, from every other
// member, the m chunks it contributes to each parity block (its parity
// block itself for its own slot), and XORs them: that is its image and its
// parity block.
void DataStore::Impl::rebuild_parity(const detail::RestorePlan& plan, Slot*& mine) {
  const int n = size();
  const int r = rank();
  const std::int64_t it = plan.iteration;
  const detail::ParityGroup g = detail::parity_group(r, n, options.memory.parity_group);
  const int m = g.count;
  int f = -1;
  for (int q = g.first; q < g.first + m; ++q) {
    if (plan.ranks[static_cast<std::size_t>(q)].source == Source::parity) f = q;
  }
  if (f < 0) return;
  const std::uint64_t stripe = plan.ranks[static_cast<std::size_t>(f)].bytes;
  const std::uint64_t c = stripe / static_cast<std::uint64_t>(m - 1);
  const int fi = f - g.first;
  if (r == f) {
    scratch_a.reset(c * static_cast<std::uint64_t>(m));
    scratch_b.reset(c * static_cast<std::uint64_t>(m));
    std::memset(scratch_a.data(), 0, scratch_a.size());
    for (int i = g.first; i < g.first + m; ++i) {
      if (i == f) continue;
      Transfer x(comm, orphans);
      x.recv(scratch_b.data(), scratch_b.size(), i, detail::kTagRebuild);
      x.wait();
      detail::xor_into(scratch_a.data(), scratch_b.data(), scratch_a.size());
    }
    Slot& s = slot_for(it, n);
    s.sequence = plan.sequence;
    s.own.reset(stripe);
    s.held.reset(c);
    for (int k = 0; k < m - 1; ++k) {
      std::memcpy(s.own.data() + static_cast<std::uint64_t>(k) * c,
                  scratch_a.data() + static_cast<std::uint64_t>((fi + k + 1) % m) * c, c);
    }
    std::memcpy(s.held.data(), scratch_a.data() + static_cast<std::uint64_t>(fi) * c, c);
    s.stripe = stripe;
    s.parity_ok = true;
    mine = &s;
    scratch_a.release();  // m chunks each: not worth keeping
    scratch_b.release();
    return;
  }
  Slot* s = find(it);
  if (!s || !s->own_ok || !s->parity_ok) {
    FX_THROW(CheckpointError,
             fmt::format("restore plan expects this rank's image and parity of iteration {}", it));
  }
  // One contiguous message of m chunks, in target order.
  const int idx = r - g.first;
  scratch_b.reset(c * static_cast<std::uint64_t>(m));
  for (int j = 0; j < m; ++j) {
    const std::byte* src =
        j == idx ? s->held.data() : s->own.data() + static_cast<std::uint64_t>((j - idx + m) % m - 1) * c;
    std::memcpy(scratch_b.data() + static_cast<std::uint64_t>(j) * c, src, c);
  }
  Transfer x(comm, orphans);
  x.send(scratch_b.data(), scratch_b.size(), f, detail::kTagRebuild);
  x.wait();
  scratch_b.release();
}

}  // namespace fx
