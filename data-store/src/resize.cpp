// DataStore::restore_resized: after a shrink, the last version as the old
// decomposition laid it out. Every survivor still holds what it held before
// (its own image and its buddy's copy, under their OLD logical ranks); one
// allgather of those inventories tells every rank where each old image is,
// one allgather of the wanted old ranks tells the holders where to send it.
#include <fx/clock.hpp>
#include <fx/data_store/store.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "store_impl.hpp"
#include "xor.hpp"

namespace fx {
namespace detail {

struct PriorImage {
  ImageInfo info;
  const std::byte* bytes = nullptr;  // the whole image
};

namespace {

using Inventories = std::vector<std::vector<SlotSummary>>;

// A version anyone holds: its iteration, the size that wrote it, and its
// newest sequence.
struct Candidate {
  std::int64_t iteration = -1;
  int size = 0;
  std::int64_t sequence = 0;
};

// The versions anyone holds, newest first (the later sequence first at the
// same iteration: one written again at another size after a re-decomposing
// restore). After two shrinks without a commit between them, memory holds
// versions of two sizes.
std::vector<Candidate> candidates(const Inventories& inventories) {
  std::vector<Candidate> out;
  for (const auto& inv : inventories) {
    for (const auto& s : inv) {
      if (s.iteration < 0 || s.size <= 0) continue;
      auto same = std::find_if(out.begin(), out.end(), [&](const Candidate& c) {
        return c.iteration == s.iteration && c.size == s.size;
      });
      if (same == out.end()) {
        out.push_back({s.iteration, s.size, s.sequence});
      } else {
        same->sequence = std::max(same->sequence, s.sequence);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    return std::tie(a.iteration, a.sequence) > std::tie(b.iteration, b.sequence);
  });
  return out;
}

// Where each old rank's image of iteration `it` is: own copies first
// (lowest new rank), then buddy copies. `sequence`: the newest seen.
std::vector<PriorSource> copy_sources(const Inventories& inventories, std::int64_t it, int old_size,
                                      std::int64_t& sequence) {
  std::vector<PriorSource> src(static_cast<std::size_t>(old_size));
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t p = 0; p < inventories.size(); ++p) {
      for (const auto& s : inventories[p]) {
        if (s.iteration != it || s.size != old_size) continue;
        const int q = pass == 0 ? s.own_rank : s.held_rank;
        if (q < 0 || q >= old_size || src[static_cast<std::size_t>(q)].holder >= 0) continue;
        auto& d = src[static_cast<std::size_t>(q)];
        d.holder = static_cast<int>(p);
        d.own = pass == 0;
        d.bytes = pass == 0 ? s.own_bytes : s.held_bytes;
        sequence = std::max(sequence, s.sequence);
      }
    }
  }
  return src;
}

// Per old rank, its own copy of version `it` with a parity block, or nullptr.
std::vector<const SlotSummary*> parity_coded(const Inventories& inventories, std::int64_t it, int old_size) {
  std::vector<const SlotSummary*> coded(static_cast<std::size_t>(old_size), nullptr);
  for (const auto& inv : inventories) {
    for (const auto& s : inv) {
      if (s.iteration == it && s.size == old_size && s.parity && s.own_rank >= 0 && s.own_rank < old_size)
        coded[static_cast<std::size_t>(s.own_rank)] = &s;
    }
  }
  return coded;
}

// When every other image of q's group `g` is an own copy with a complete
// parity block (all of one stripe), the first of them; else nullptr.
const SlotSummary* rebuild_source(int q, const ParityGroup& g, const std::vector<const SlotSummary*>& coded,
                                  const std::vector<PriorSource>& src) {
  const SlotSummary* first = nullptr;
  bool whole = g.count > 1;
  for (int i = g.first; i < g.first + g.count && whole; ++i) {
    if (i == q) continue;
    const SlotSummary* c = coded[static_cast<std::size_t>(i)];
    whole = c && src[static_cast<std::size_t>(i)].own && (!first || c->stripe == first->stripe);
    if (whole && !first) first = c;
  }
  return whole ? first : nullptr;
}

// Under parity: an image found nowhere is rebuilt when every other image
// of its old group is an own copy with a complete parity block.
void parity_sources(const Inventories& inventories, std::int64_t it, int old_size, int group_size,
                    std::vector<PriorSource>& src) {
  const std::vector<const SlotSummary*> coded = parity_coded(inventories, it, old_size);
  for (int q = 0; q < old_size; ++q) {
    if (src[static_cast<std::size_t>(q)].holder >= 0) continue;
    const ParityGroup g = parity_group(q, old_size, group_size);
    const SlotSummary* first = rebuild_source(q, g, coded, src);
    if (first == nullptr) continue;
    auto& d = src[static_cast<std::size_t>(q)];
    d.holder = src[static_cast<std::size_t>(q == g.first ? g.first + 1 : g.first)].holder;
    d.parity = true;
    d.bytes = first->stripe;
  }
}

}  // namespace

PriorPlan plan_prior(const Inventories& inventories, int parity_group_size) {
  PriorPlan plan;
  const std::vector<Candidate> all = candidates(inventories);
  if (all.empty()) return plan;
  plan.old_size = all.front().size;  // the newest's, for the message when none is complete
  for (const Candidate& c : all) {
    std::int64_t sequence = 0;
    std::vector<PriorSource> src = copy_sources(inventories, c.iteration, c.size, sequence);
    if (parity_group_size > 0) parity_sources(inventories, c.iteration, c.size, parity_group_size, src);
    std::vector<int> missing;
    for (std::size_t q = 0; q < src.size(); ++q) {
      if (src[q].holder < 0) missing.push_back(static_cast<int>(q));
    }
    if (missing.empty()) {
      plan.old_size = c.size;
      plan.iteration = c.iteration;
      plan.sequence = sequence;
      plan.sources = std::move(src);
      return plan;
    }
    plan.lost.push_back({c.iteration, c.size, missing});
  }
  return plan;
}

std::string lost_text(const PriorPlan& plan, std::string_view ranks_word) {
  // Versions of two sizes (a second shrink before a commit): each says its own.
  const bool sizes = std::any_of(plan.lost.begin(), plan.lost.end(),
                                 [&](const PriorPlan::Lost& l) { return l.size != plan.lost.front().size; });
  std::string lost;
  for (const auto& l : plan.lost) {
    lost +=
        fmt::format("{}{} {} of iteration {}", lost.empty() ? "" : ", ", ranks_word, l.ranks, l.iteration);
    if (sizes) lost += fmt::format(" (written by {} ranks)", l.size);
  }
  return lost;
}

}  // namespace detail

// ---------------------------------------------------------------- pieces

int PriorPiece::rank() const { return image_.info.rank; }
int PriorPiece::old_size() const { return image_.info.size; }
std::int64_t PriorPiece::iteration() const { return image_.info.iteration; }

bool PriorPiece::has(const std::string& name) const {
  return std::any_of(image_.info.members.begin(), image_.info.members.end(),
                     [&](const detail::MemberRecord& r) { return r.name == name; });
}

PriorMember PriorPiece::member(const std::string& name) const {
  const auto& info = image_.info;
  for (const auto& r : info.members) {
    if (r.name == name) {
      return {r.name,
              r.type,
              r.layout,
              r.extents,
              image_.bytes + info.payload_offset + r.offset,
              static_cast<std::size_t>(r.bytes)};
    }
  }
  std::vector<std::string> names;
  for (const auto& r : info.members) names.push_back(r.name);
  FX_THROW(CheckpointError, fmt::format("old rank {}'s image of iteration {} has no member '{}' (it has: {})",
                                        info.rank, info.iteration, name, fmt::join(names, ", ")));
}

PriorMember PriorPiece::typed(const std::string& name, const std::string& type, std::size_t element) const {
  PriorMember m = member(name);
  if (m.type != type || m.bytes % element != 0) {
    FX_THROW(CheckpointError,
             fmt::format("member '{}' of old rank {}'s image of iteration {} is {} ({} bytes), "
                         "read as {}",
                         name, image_.info.rank, image_.info.iteration, m.type, m.bytes, type));
  }
  return m;
}

void PriorPiece::not_scalar(const std::string& name, std::size_t count) const {
  FX_THROW(CheckpointError, fmt::format("member '{}' of old rank {}'s image of iteration {} has {} elements, "
                                        "read as a scalar",
                                        name, image_.info.rank, image_.info.iteration, count));
}

// ---------------------------------------------------------------- restore

namespace {

// The image of old rank q in this rank's prior versions, or null.
const std::byte* held_image(const std::vector<std::unique_ptr<detail::Slot>>& prior, std::int64_t iteration,
                            int size, int q, bool own) {
  for (const auto& s : prior) {
    if (s->iteration != iteration || s->size != size) continue;
    if (own && s->own_ok && s->own_info.rank == q) return s->own.data();
    if (!own && s->held_ok && s->held_rank == q) return s->held.data();
  }
  return nullptr;
}

// The prior slot of `iteration` (written by `size` ranks) whose own image
// is old rank q's, or null.
const detail::Slot* own_slot(const std::vector<std::unique_ptr<detail::Slot>>& prior, std::int64_t iteration,
                             int size, int q) {
  for (const auto& s : prior) {
    if (s->iteration == iteration && s->size == size && s->own_ok && s->own_info.rank == q) return s.get();
  }
  return nullptr;
}

}  // namespace

// Old rank q's image, lost alone in its parity group, rebuilt on the rank
// the plan chose (`out`, the group's stripe long) from the other members'
// images and parity blocks, which their holders send it whole. The ring of
// protect_parity() leaves P_j = XOR over d = 1..m-1 of chunk d-1 of member
// j-d's image, so chunk k of q's image is P_{q+k+1} XOR the other terms.
void DataStore::Impl::rebuild_prior(const detail::PriorPlan& plan, int q, detail::Buffer& out) {
  const auto& src = plan.sources;
  const detail::ParityGroup g = detail::parity_group(q, plan.old_size, options.memory.parity_group);
  const int m = g.count;
  const std::uint64_t stripe = src[static_cast<std::size_t>(q)].bytes;
  const std::uint64_t c = stripe / static_cast<std::uint64_t>(m - 1);
  const int me = rank();
  const int builder = src[static_cast<std::size_t>(q)].holder;
  std::vector<const std::byte*> image(static_cast<std::size_t>(m)), block(static_cast<std::size_t>(m));
  std::vector<detail::Buffer> got;
  got.reserve(2 * static_cast<std::size_t>(m));
  try {
    detail::Transfer t(comm, orphans);
    for (int i = g.first; i < g.first + m; ++i) {
      if (i == q) continue;
      const int holder = src[static_cast<std::size_t>(i)].holder;
      const detail::Slot* s = holder == me ? own_slot(prior, plan.iteration, plan.old_size, i) : nullptr;
      if (holder == me && !s) {
        FX_THROW(CheckpointError,
                 fmt::format("old rank {}'s parity data of iteration {} is not in this rank's memory "
                             "any more",
                             i, plan.iteration));
      }
      const auto k = static_cast<std::size_t>(i - g.first);
      if (me == builder) {
        if (s) {
          image[k] = s->own.data();
          block[k] = s->held.data();
        } else {
          got.emplace_back(stripe);
          t.recv(got.back().data(), stripe, holder, detail::kTagPrior);
          image[k] = got.back().data();
          got.emplace_back(c);
          t.recv(got.back().data(), c, holder, detail::kTagPrior);
          block[k] = got.back().data();
        }
      } else if (s) {
        t.send(s->own.data(), stripe, builder, detail::kTagPrior);
        t.send(s->held.data(), c, builder, detail::kTagPrior);
      }
    }
    t.wait();
  } catch (...) {
    keep_until_drained(got);  // receives into them may still be in flight
    throw;
  }
  if (me != builder) return;
  out.reset(stripe);
  const int lost = q - g.first;
  for (int k = 0; k < m - 1; ++k) {
    const int j = (lost + k + 1) % m;
    std::byte* chunk = out.data() + static_cast<std::uint64_t>(k) * c;
    std::memcpy(chunk, block[static_cast<std::size_t>(j)], c);
    for (int d = 1; d < m; ++d) {
      const int i = (j - d + m) % m;
      if (i == lost) continue;
      detail::xor_into(chunk, image[static_cast<std::size_t>(i)] + static_cast<std::uint64_t>(d - 1) * c, c);
    }
  }
}

namespace {

// The app's wanted old ranks as one flag per old rank, checked.
std::vector<char> want_flags(const std::vector<int>& wanted, const PriorVersion& v) {
  std::vector<char> want(static_cast<std::size_t>(v.size), 0);
  for (const int q : wanted) {
    if (q < 0 || q >= v.size) {
      FX_THROW(UsageError, fmt::format("restore_resized: wants old rank {}, but iteration {} was written by "
                                       "ranks 0..{}",
                                       q, v.iteration, v.size - 1));
    }
    want[static_cast<std::size_t>(q)] = 1;
  }
  return want;
}

}  // namespace

detail::PriorPlan DataStore::Impl::plan_prior_restore() {
  const auto inv = exchange_inventories(prior, false);
  std::vector<std::vector<detail::SlotSummary>> slots;
  for (const auto& i : inv) slots.push_back(i.slots);
  detail::PriorPlan plan = detail::plan_prior(slots, parity() ? options.memory.parity_group : 0);
  plan.history = std::any_of(inv.begin(), inv.end(), [](const auto& i) { return i.sequence > 0; });
  return plan;
}

// After a shrink: the survivors' memory, or a level below it standing in
// for the old images memory lost (HDF5), the first one holding a complete
// version of the old size.
detail::StoredPrior DataStore::Impl::prior_after_shrink(const detail::PriorPlan& plan) {
  detail::StoredPrior p;
  if (plan.iteration >= 0) {
    p.from = &memory();
    p.plan = plan;
    p.iteration = plan.iteration;
    p.sequence = plan.sequence;
    p.old_size = plan.old_size;
    return p;
  }
  const std::string lost = detail::lost_text(plan, "old rank(s)");
  std::vector<std::string> why;
  for (const auto& l : levels) {
    if (!l->covers_lost_memory()) continue;
    if (l->on() && rank() == 0)
      log::warn("restore after the shrink: no copy survived of {}; trying {}", lost, l->name());
    std::string not_there;
    if (auto found = l->prior_of_size(plan.old_size, not_there)) return std::move(*found);
    why.push_back(std::move(not_there));
  }
  if (why.empty()) why.emplace_back("no level below memory keeps versions");
  FX_THROW(CheckpointLost,
           fmt::format("restore after the shrink from {} to {} ranks: no copy survived of {} (each died with "
                       "the rank holding its copy), and {}",
                       plan.old_size, size(), lost, fmt::join(why, "; ")));
}

std::vector<char> DataStore::Impl::exchange_wants(const std::vector<char>& want) {
  const int m = static_cast<int>(want.size());
  std::vector<char> wanted(want.size() * static_cast<std::size_t>(size()));
  FX_CHECK_MPI(comm, MPI_Allgather(want.data(), m, MPI_CHAR, wanted.data(), m, MPI_CHAR, comm.raw()));
  return wanted;
}

// Every wanted image from where the plan found it: this rank's memory, a
// parity rebuild, a node-local file this rank mapped (out.local), or its
// holder (one message per piece and wanting rank).
void DataStore::Impl::fetch_prior(const detail::PriorPlan& plan, std::int64_t iteration,
                                  const std::vector<char>& want, const std::vector<char>& wanted,
                                  detail::PriorPieces& out) {
  const int m = plan.old_size;
  const int n = size();
  const int r = rank();
  try {
    for (int q = 0; q < m; ++q) {
      if (plan.sources[static_cast<std::size_t>(q)].parity) rebuild_prior(plan, q, out.local[q]);
    }
    auto image_of = [&](int q) -> const std::byte* {
      const auto made = out.local.find(q);
      if (made != out.local.end()) return made->second.data();
      return held_image(prior, iteration, plan.old_size, q, plan.sources[static_cast<std::size_t>(q)].own);
    };
    detail::Transfer t(comm, orphans);
    // Receives first; holders send in ascending old rank order, matched in
    // that order (one tag, one sender per piece).
    for (int q = 0; q < m; ++q) {
      const auto& src = plan.sources[static_cast<std::size_t>(q)];
      if (!want[static_cast<std::size_t>(q)]) continue;
      if (src.holder == r) {
        out.at[q] = {image_of(q), src.bytes};
        continue;
      }
      auto& buf = out.received[q];
      buf.reset(src.bytes);
      t.recv(buf.data(), src.bytes, src.holder, detail::kTagPrior);
      out.at[q] = {buf.data(), src.bytes};
      out.moved += src.bytes;
    }
    for (int q = 0; q < m; ++q) {
      const auto& src = plan.sources[static_cast<std::size_t>(q)];
      if (src.holder != r) continue;
      const std::byte* image = image_of(q);
      for (int p = 0; p < n; ++p) {
        const std::size_t flag = static_cast<std::size_t>(p) * static_cast<std::size_t>(m) + q;
        if (p != r && wanted[flag]) t.send(image, src.bytes, p, detail::kTagPrior);
      }
    }
    t.wait();
  } catch (...) {
    // The transfer's unfinished requests went to the orphans: so do the
    // buffers they point into.
    keep_until_drained(out.received);
    keep_until_drained(out.local);
    throw;
  }
}

// Every piece checked before the app sees any; the outcome agreed.
std::vector<detail::PriorImage> DataStore::Impl::check_prior(const PriorVersion& v,
                                                             detail::PriorPieces& pieces) {
  std::vector<detail::PriorImage> images;
  for (const auto& [q, piece] : pieces.at) {
    if (!pieces.error.empty()) break;
    const auto [image, bytes] = piece;
    const std::string what =
        fmt::format("old rank {}'s image of iteration {} ({})", q, v.iteration, to_string(v.level));
    try {
      if (!image) FX_THROW(CheckpointError, what + ": not in this rank's memory any more");
      detail::PriorImage pi{detail::read_header(image, bytes, bytes, what), image};
      if (pi.info.rank != q || pi.info.iteration != v.iteration || pi.info.size != v.size) {
        FX_THROW(CheckpointError, fmt::format("{}: holds rank {} of {}, iteration {}", what, pi.info.rank,
                                              pi.info.size, pi.info.iteration));
      }
      detail::verify_payload(pi.info, image, what);
      images.push_back(std::move(pi));
    } catch (const CheckpointError& e) {
      pieces.error = e.what();
      log::error("restore after the shrink: {}", e.what());
    }
  }
  if (!agree(pieces.error.empty() ? 1 : 0)) {
    FX_THROW(CheckpointError, !pieces.error.empty()
                                  ? pieces.error
                                  : fmt::format("restore after the shrink: iteration {} ({}) failed its "
                                                "checks on another rank (see its log)",
                                                v.iteration, to_string(v.level)));
  }
  return images;
}

// The stats and the cadence after a resized restore; rank 0 says it.
CheckpointStats DataStore::Impl::finish_prior(const PriorVersion& v, const detail::Level& from,
                                              std::int64_t seq, const detail::PriorPieces& pieces,
                                              double seconds) {
  sequence = seq;  // the storage levels' cadence goes on from the restored version's
  committed.reset();
  for (const auto& l : levels) l->after_resized(v.iteration, l.get() == &from);
  CheckpointStats st;
  st.level = v.level;
  st.iteration = v.iteration;
  st.bytes = pieces.moved;
  st.old_size = v.size;
  st.seconds = seconds;
  from.seconds(st) = seconds;
  restore_stats = st;
  const auto delivered = comm.allreduce(static_cast<std::int64_t>(pieces.at.size()), MPI_SUM);
  if (rank() == 0) {
    log::info(
        "restored iteration {} from {} as written by {} ranks, re-decomposed onto {} ({} old images "
        "delivered) in {:.2f} ms",
        v.iteration, from.name(), v.size, v.new_size, delivered, seconds * 1e3);
  }
  return st;
}

std::optional<PriorVersion> DataStore::restore_resized(const PriorWants& wants, const PriorUse& use) {
  if (!comm_.valid()) FX_THROW(UsageError, "data store: restore_resized() before set_comm()");
  Impl& im = *impl_;
  const double t0 = now();
  im.settle_background();
  own_comm();
  // After a relaunch on another number of ranks, what restore() found in
  // storage; after a shrink, what the survivors hold in memory.
  std::optional<detail::StoredPrior> stored = std::exchange(im.stored_prior, std::nullopt);
  if (own_.allreduce(im.resize_from_storage ? 1 : 0, MPI_MAX) == 1 && !stored) {
    // Found before a repair changed the ranks: planned again for these.
    const detail::RestorePlan cold;  // a cold start's: neither fresh nor a history
    stored = im.find_stored_prior({cold, now(), options_.hdf5.restart, {}});
    if (!stored)
      FX_THROW(CheckpointLost,
               "restore after the relaunch: the version of another job size found at the "
               "start is not complete on the live ranks any more");
  }
  if (!stored) {
    const detail::PriorPlan plan = im.plan_prior_restore();
    // Nothing, or only the first commit cut short (restore() starts afresh
    // then too).
    if (plan.old_size == 0 || (plan.iteration < 0 && !plan.history)) {
      if (own_.rank() == 0)
        log::info("restore after the shrink: no version was ever committed; starting from scratch");
      im.start_over();
      return std::nullopt;
    }
    stored = im.prior_after_shrink(plan);
  }
  const PriorVersion v{stored->iteration, stored->old_size, own_.size(), stored->from->id()};
  detail::PriorRequest request;
  request.want = want_flags(wants(v), v);
  request.wanted = im.exchange_wants(request.want);
  detail::PriorPieces pieces;
  stored->from->read_prior(*stored, request, pieces);
  for (const auto& pi : im.check_prior(v, pieces)) use(detail::StoreAccess::piece(pi));
  resized_restore_ = im.finish_prior(v, *stored->from, stored->sequence, pieces, now() - t0);
  return v;
}

}  // namespace fx
