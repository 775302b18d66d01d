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

#include "hdf5_file.hpp"
#include "store_impl.hpp"
#include "xor.hpp"

namespace fx {
namespace detail {

struct PriorImage {
  ImageInfo info;
  const std::byte* bytes = nullptr;  // the whole image
};

PriorPlan plan_prior(const std::vector<std::vector<SlotSummary>>& inventories, int parity_group_size) {
  PriorPlan plan;
  // The old size is that of the newest version anyone holds (all prior
  // versions of the survivors come from the same communicator).
  std::int64_t newest = -1;
  for (const auto& inv : inventories) {
    for (const auto& s : inv) {
      if (s.iteration > newest && s.size > 0) {
        newest = s.iteration;
        plan.old_size = s.size;
      }
    }
  }
  if (newest < 0) return plan;
  std::vector<std::int64_t> candidates;
  for (const auto& inv : inventories) {
    for (const auto& s : inv) {
      if (s.iteration >= 0 && s.size == plan.old_size) candidates.push_back(s.iteration);
    }
  }
  std::sort(candidates.rbegin(), candidates.rend());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  const auto m = static_cast<std::size_t>(plan.old_size);
  for (const std::int64_t it : candidates) {
    std::vector<PriorSource> src(m);
    // Own copies first (lowest new rank), then buddy copies.
    for (int pass = 0; pass < 2; ++pass) {
      for (std::size_t p = 0; p < inventories.size(); ++p) {
        for (const auto& s : inventories[p]) {
          if (s.iteration != it || s.size != plan.old_size) continue;
          const int q = pass == 0 ? s.own_rank : s.held_rank;
          if (q < 0 || q >= plan.old_size || src[static_cast<std::size_t>(q)].holder >= 0) continue;
          auto& d = src[static_cast<std::size_t>(q)];
          d.holder = static_cast<int>(p);
          d.own = pass == 0;
          d.bytes = pass == 0 ? s.own_bytes : s.held_bytes;
          plan.sequence = std::max(plan.sequence, s.sequence);
        }
      }
    }
    if (parity_group_size > 0) {
      // Own images with a complete parity block, by old rank.
      std::vector<const SlotSummary*> coded(m, nullptr);
      for (const auto& inv : inventories) {
        for (const auto& s : inv) {
          if (s.iteration == it && s.size == plan.old_size && s.parity && s.own_rank >= 0 &&
              s.own_rank < plan.old_size) {
            coded[static_cast<std::size_t>(s.own_rank)] = &s;
          }
        }
      }
      for (int q = 0; q < plan.old_size; ++q) {
        if (src[static_cast<std::size_t>(q)].holder >= 0) continue;
        const ParityGroup g = parity_group(q, plan.old_size, parity_group_size);
        const SlotSummary* first = nullptr;
        bool whole = g.count > 1;
        for (int i = g.first; i < g.first + g.count && whole; ++i) {
          if (i == q) continue;
          const SlotSummary* c = coded[static_cast<std::size_t>(i)];
          whole = c && src[static_cast<std::size_t>(i)].own && (!first || c->stripe == first->stripe);
          if (whole && !first) first = c;
        }
        if (!whole) continue;
        auto& d = src[static_cast<std::size_t>(q)];
        d.holder = src[static_cast<std::size_t>(q == g.first ? g.first + 1 : g.first)].holder;
        d.parity = true;
        d.bytes = first->stripe;
      }
    }
    std::vector<int> missing;
    for (std::size_t q = 0; q < m; ++q) {
      if (src[q].holder < 0) missing.push_back(static_cast<int>(q));
    }
    if (!missing.empty()) plan.lost.emplace_back(it, missing);
    if (missing.empty()) {
      plan.iteration = it;
      plan.sources = std::move(src);
      return plan;
    }
    plan.sequence = 0;
  }
  return plan;
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
                            int q, bool own) {
  for (const auto& s : prior) {
    if (s->iteration != iteration) continue;
    if (own && s->own_ok && s->own_info.rank == q) return s->own.data();
    if (!own && s->held_ok && s->held_rank == q) return s->held.data();
  }
  return nullptr;
}

// The prior slot of `iteration` whose own image is old rank q's, or null.
const detail::Slot* own_slot(const std::vector<std::unique_ptr<detail::Slot>>& prior, std::int64_t iteration,
                             int q) {
  for (const auto& s : prior) {
    if (s->iteration == iteration && s->own_ok && s->own_info.rank == q) return s.get();
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
      const detail::Slot* s = holder == me ? own_slot(prior, plan.iteration, i) : nullptr;
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

std::optional<PriorVersion> DataStore::restore_resized(const PriorWants& wants, const PriorUse& use) {
  if (!comm_.valid()) FX_THROW(UsageError, "data store: restore_resized() before set_comm()");
  Impl& im = *impl_;
  const double t0 = now();
  im.settle_background();
  const int n = comm_.size();
  const int r = comm_.rank();

  // Where every old image is: each rank's prior versions, newest first.
  const std::size_t k = static_cast<std::size_t>(im.depth()) + 2;
  std::vector<detail::SlotSummary> mine(k), all(k * static_cast<std::size_t>(n));
  {
    std::size_t i = 0;
    for (auto it = im.prior.rbegin(); it != im.prior.rend() && i < k; ++it, ++i) mine[i] = (*it)->summary();
  }
  const int block = static_cast<int>(k * sizeof(detail::SlotSummary));
  FX_CHECK_MPI(comm_, MPI_Allgather(mine.data(), block, MPI_BYTE, all.data(), block, MPI_BYTE, comm_.raw()));
  std::vector<std::vector<detail::SlotSummary>> inv(static_cast<std::size_t>(n));
  for (std::size_t p = 0; p < inv.size(); ++p) inv[p].assign(all.begin() + p * k, all.begin() + (p + 1) * k);
  const detail::PriorPlan plan = detail::plan_prior(inv, im.parity() ? options_.memory.parity_group : 0);
  if (plan.old_size == 0) {
    if (r == 0) log::info("restore after the shrink: no version was ever committed; starting from scratch");
    return std::nullopt;
  }

  std::string lost;  // "old rank(s) [1] of iteration 10, ..." for the messages
  for (const auto& [it, ranks] : plan.lost) {
    lost += fmt::format("{}old rank(s) {} of iteration {}", lost.empty() ? "" : ", ", ranks, it);
  }
  PriorVersion v;
  v.size = plan.old_size;
  v.new_size = n;
  const int m = plan.old_size;
  detail::Manifest manifest;
  if (plan.iteration >= 0) {
    v.iteration = plan.iteration;
    v.level = "memory";
  } else {
    // A rank died with the rank holding its copy: HDF5, when it is on.
    const bool disk = options_.hdf5.every > 0 || options_.hdf5.restart;
    if (!disk) {
      FX_THROW(
          CheckpointLost,
          fmt::format("restore after the shrink from {} to {} ranks: no copy survived of {} (each died with "
                      "the rank holding its copy) and the HDF5 level is off (checkpoint.hdf5.every = 0)",
                      m, n, lost));
    }
    if (r == 0) {
      log::warn("restore after the shrink: no copy survived of {}; trying HDF5", lost);
    }
    // Rank 0 picks the newest complete version written by the old ranks;
    // everyone gets its manifest (iteration, sequence, then bytes and
    // checksum per old rank).
    std::vector<std::uint64_t> flat(2 + 2 * static_cast<std::size_t>(m), 0);
    std::int64_t found = -1;
    if (r == 0) {
      for (const auto& d : detail::list_versions(im.root())) {
        if (!d.complete) continue;
        try {
          const auto mf = detail::read_manifest(d.path / detail::kManifestName);
          if (mf.rank_count != m || mf.iteration != d.iteration) continue;
          flat[0] = static_cast<std::uint64_t>(mf.iteration);
          flat[1] = static_cast<std::uint64_t>(mf.sequence);
          for (int q = 0; q < m; ++q) {
            flat[2 + 2 * static_cast<std::size_t>(q)] = mf.files[static_cast<std::size_t>(q)].bytes;
            flat[3 + 2 * static_cast<std::size_t>(q)] = mf.files[static_cast<std::size_t>(q)].checksum;
          }
          found = mf.iteration;
          break;
        } catch (const CheckpointError& e) {
          log::warn("skipping HDF5 version: {}", e.what());
        }
      }
    }
    comm_.bcast(&found, 1, 0);
    if (found < 0) {
      FX_THROW(
          CheckpointLost,
          fmt::format("restore after the shrink from {} to {} ranks: no copy survived of {}, and {} holds "
                      "no complete HDF5 version written by {} ranks",
                      m, n, lost, im.root().string(), m));
    }
    comm_.bcast(flat.data(), flat.size(), 0);
    manifest.iteration = static_cast<std::int64_t>(flat[0]);
    manifest.sequence = static_cast<std::int64_t>(flat[1]);
    manifest.rank_count = m;
    for (int q = 0; q < m; ++q) {
      manifest.files.push_back({q, detail::rank_file_name(q), flat[2 + 2 * static_cast<std::size_t>(q)],
                                flat[3 + 2 * static_cast<std::size_t>(q)]});
    }
    v.iteration = manifest.iteration;
    v.level = "hdf5";
  }

  // Who wants what: one flag per old rank and new rank.
  std::vector<char> want(static_cast<std::size_t>(m), 0);
  for (const int q : wants(v)) {
    if (q < 0 || q >= m) {
      FX_THROW(UsageError,
               fmt::format("restore_resized: wants old rank {}, but iteration {} was written by ranks "
                           "0..{}",
                           q, v.iteration, m - 1));
    }
    want[static_cast<std::size_t>(q)] = 1;
  }
  std::vector<char> wanted(static_cast<std::size_t>(m) * static_cast<std::size_t>(n));
  FX_CHECK_MPI(comm_, MPI_Allgather(want.data(), m, MPI_CHAR, wanted.data(), m, MPI_CHAR, comm_.raw()));
  auto wants_piece = [&](int p, int q) {
    return wanted[static_cast<std::size_t>(p) * static_cast<std::size_t>(m) + static_cast<std::size_t>(q)] !=
           0;
  };

  // The pieces this rank gets: in its own memory, received, or read from disk.
  std::map<int, detail::Buffer> received;
  std::map<int, const std::byte*> at;
  std::uint64_t moved = 0;
  int ok = 1;
  std::string error;
  std::map<int, detail::Buffer> rebuilt;  // parity: images this rank rebuilt for the others
  if (v.level == "memory") {
    try {
      for (int q = 0; q < m; ++q) {
        if (plan.sources[static_cast<std::size_t>(q)].parity) im.rebuild_prior(plan, q, rebuilt[q]);
      }
      auto image_of = [&](int q) -> const std::byte* {
        const auto& src = plan.sources[static_cast<std::size_t>(q)];
        return src.parity ? rebuilt[q].data() : held_image(im.prior, v.iteration, q, src.own);
      };
      detail::Transfer t(comm_, im.orphans);
      // Receives first; holders send in ascending old rank order, matched in
      // that order (one tag, one sender per piece).
      for (int q = 0; q < m; ++q) {
        const auto& src = plan.sources[static_cast<std::size_t>(q)];
        if (!want[static_cast<std::size_t>(q)]) continue;
        if (src.holder == r) {
          at[q] = image_of(q);
        } else {
          auto& buf = received[q];
          buf.reset(src.bytes);
          t.recv(buf.data(), src.bytes, src.holder, detail::kTagPrior);
          at[q] = buf.data();
          moved += src.bytes;
        }
      }
      for (int q = 0; q < m; ++q) {
        const auto& src = plan.sources[static_cast<std::size_t>(q)];
        if (src.holder != r) continue;
        const std::byte* image = image_of(q);
        for (int p = 0; p < n; ++p) {
          if (p != r && wants_piece(p, q)) t.send(image, src.bytes, p, detail::kTagPrior);
        }
      }
      t.wait();
    } catch (...) {
      // The transfer's unfinished requests went to the orphans: so do
      // the buffers they point into.
      im.keep_until_drained(received);
      im.keep_until_drained(rebuilt);
      throw;
    }
  } else {
    const auto dir = im.root() / detail::version_dir_name(v.iteration);
    for (int q = 0; q < m; ++q) {
      if (!want[static_cast<std::size_t>(q)]) continue;
      try {
        detail::read_rank_file_as_written(dir, manifest, q, received[q]);
        at[q] = received[q].data();
        moved += received[q].size();
      } catch (const CheckpointError& e) {
        ok = 0;
        error = e.what();
        log::error("restore after the shrink: {}", e.what());
        break;
      }
    }
  }

  // Check every piece before the app sees any, and agree on the outcome.
  std::vector<detail::PriorImage> images;
  if (ok) {
    for (const auto& [q, image] : at) {
      const std::string what =
          fmt::format("old rank {}'s image of iteration {} ({})", q, v.iteration, v.level);
      try {
        if (!image) FX_THROW(CheckpointError, what + ": not in this rank's memory any more");
        const std::size_t size =
            received.count(q) ? received[q].size() : plan.sources[static_cast<std::size_t>(q)].bytes;
        detail::PriorImage pi{detail::read_header(image, size, what), image};
        if (pi.info.rank != q || pi.info.iteration != v.iteration || pi.info.size != m) {
          FX_THROW(CheckpointError, fmt::format("{}: holds rank {} of {}, iteration {}", what, pi.info.rank,
                                                pi.info.size, pi.info.iteration));
        }
        detail::verify_payload(pi.info, image, what);
        images.push_back(std::move(pi));
      } catch (const CheckpointError& e) {
        ok = 0;
        error = e.what();
        log::error("restore after the shrink: {}", e.what());
        break;
      }
    }
  }
  if (!im.agree(ok)) {
    FX_THROW(CheckpointError,
             error.empty()
                 ? fmt::format("restore after the shrink: iteration {} ({}) failed its checks on another "
                               "rank (see its log)",
                               v.iteration, v.level)
                 : error);
  }
  for (const auto& pi : images) use(PriorPiece(pi));

  // The HDF5 cadence goes on from the restored version's sequence.
  im.sequence = v.level == "memory" ? plan.sequence : manifest.sequence;
  im.committed.reset();
  if (v.level == "hdf5" && r == 0) {
    detail::set_aside_newer_versions(im.root(), v.iteration);
  }
  CheckpointStats st;
  st.level = v.level;
  st.iteration = v.iteration;
  st.bytes = moved;
  st.old_size = m;
  st.seconds = now() - t0;
  (v.level == "memory" ? st.memory_seconds : st.hdf5_seconds) = st.seconds;
  im.restore_stats = st;
  resized_restore_ = st;
  const auto pieces =
      static_cast<unsigned long long>(comm_.allreduce(static_cast<std::int64_t>(images.size()), MPI_SUM));
  if (r == 0) {
    log::info(
        "restored iteration {} from {} as written by {} ranks, re-decomposed onto {} ({} old images "
        "delivered) in {:.2f} ms",
        v.iteration, v.level == "memory" ? "memory" : "HDF5", m, n, pieces, st.seconds * 1e3);
  }
  return v;
}

}  // namespace fx
