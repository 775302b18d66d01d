// Static members (DataStore::add_static): sent to the buddy at the first
// commit after registration, given back to recovered ranks by restore().
// A transfer is one message per member, straight from and into the app's
// memory; its sizes come from a header message (publish) or from the
// allgather of every rank's state (restore).
#include <fx/data_store/store.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <numeric>

#include "store_impl.hpp"

namespace fx {

using detail::StaticCopies;

using Stream = detail::StaticStream;

namespace {

std::uint64_t total(const std::vector<std::uint64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0});
}

}  // namespace

std::vector<std::uint64_t> DataStore::Impl::static_sizes() const {
  std::vector<std::uint64_t> out;
  for (const auto& m : statics) out.push_back(m.contents().second);
  return out;
}

// The headers (both ways, so every receiver knows what to make room for).
void DataStore::Impl::exchange_static_headers(std::vector<Stream>& streams) {
  const int r = rank();
  const std::size_t m = statics.size();
  detail::Transfer t(comm, orphans);
  for (auto& s : streams) {
    if (s.from == r) {
      s.sizes = s.owner == r ? static_sizes() : sc.held_sizes;
      t.send(reinterpret_cast<const std::byte*>(s.sizes.data()), m * sizeof(std::uint64_t), s.to, s.tag);
    } else if (s.to == r) {
      s.sizes.assign(m, 0);
      t.recv(reinterpret_cast<std::byte*>(s.sizes.data()), m * sizeof(std::uint64_t), s.from, s.tag);
    }
  }
  t.wait();
}

// The members, straight from and into the app's memory; a held copy lands
// in the returned buffers.
detail::IncomingHeld DataStore::Impl::post_static_streams(const std::vector<Stream>& streams,
                                                          detail::Transfer& t) {
  const int r = rank();
  const std::size_t m = statics.size();
  detail::IncomingHeld in;
  for (const auto& s : streams) {
    const bool held_in = s.to == r && s.owner != r;
    if (held_in) {
      in = {s.owner, s.sizes, std::vector<detail::Buffer>(m)};
    }
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t n = s.sizes[i];
      if (n == 0) continue;
      if (s.to == r) {
        std::byte* dst = nullptr;
        if (held_in) {
          in.buffers[i].reset(n);
          dst = in.buffers[i].data();
        } else {
          if (n % statics[i].element != 0)
            FX_THROW(CheckpointError,
                     fmt::format("static member '{}': {} bytes from rank {} are not whole elements",
                                 statics[i].name, n, s.from));
          dst = statics[i].resize(n);
        }
        t.recv(dst, n, s.from, s.tag);
      } else if (s.from == r) {
        const std::byte* src = s.owner == r ? statics[i].contents().first : sc.held[i].data();
        t.send(src, n, s.to, s.tag);
      }
    }
  }
  return in;
}

void DataStore::Impl::install_held(detail::IncomingHeld& in) {
  sc.held = std::move(in.buffers);
  sc.held_sizes = std::move(in.sizes);
  sc.held_rank = in.owner;
}

// Streams of this rank, completed here. Returns the bytes received.
std::uint64_t DataStore::Impl::run_static_streams(std::vector<Stream>& streams) {
  const int r = rank();
  detail::Transfer t(comm, orphans);
  detail::IncomingHeld in = post_static_streams(streams, t);
  try {
    t.wait();
  } catch (...) {
    keep_until_drained(in.buffers);
    throw;
  }
  std::uint64_t received = 0;
  for (const auto& s : streams) {
    if (s.to != r) continue;
    received += total(s.sizes);
    if (s.owner != r) continue;
    sc.own = true;
    for (std::size_t i = 0; i < statics.size(); ++i)  // device members: on to the device
      if (s.sizes[i] > 0 && statics[i].loaded) statics[i].loaded();
  }
  if (in.owner >= 0) install_held(in);
  return received;
}

// Streams of this rank that only re-protect (held copies), posted once the
// app has resumed: the app goes on meanwhile, as for the dynamic members'
// re-protection. The new held copy replaces the old one once every transfer
// of this rank is done; on a failure the old state stays and the next
// restore finds the copy missing.
void DataStore::Impl::start_deferred_statics() {
  if (sc.deferred.empty()) return;
  detail::Transfer t(comm, orphans);
  auto in = std::make_shared<detail::IncomingHeld>(post_static_streams(sc.deferred, t));
  sc.deferred.clear();
  background.push_back({t.release(), [this, in] {
                          if (in->owner >= 0) install_held(*in);
                        }});
}

std::uint64_t DataStore::Impl::publish_statics() {
  const int n = size();
  if (!sc.publish_due || statics.empty() || n < 2) return 0;
  const int r = rank();
  const int d = std::max(distance, 1);
  std::vector<Stream> streams;
  for (int q = 0; q < n; ++q)
    if (q == r || detail::buddy_of(q, n, d) == r)
      streams.push_back({q, q, detail::buddy_of(q, n, d), detail::kTagStatic, {}});
  sc.own = true;  // the app filled them before its first commit
  exchange_static_headers(streams);
  run_static_streams(streams);
  sc.publish_due = false;
  return total(static_sizes());
}

// Every rank's static state, one row each: whether the app's memory holds
// its own data, whose copy it holds, and the byte counts of both, so that
// every transfer's size is known without a header message.
detail::StaticState DataStore::Impl::gather_static_state() const {
  detail::StaticState st;
  st.members = statics.size();
  const std::size_t row = st.row();
  std::vector<std::uint64_t> mine(row, 0);
  mine[0] = sc.own ? 1 : 0;
  mine[1] = static_cast<std::uint64_t>(sc.held_rank) + 1;  // -1 (none) becomes 0
  if (sc.own) {
    const auto own = static_sizes();
    std::copy(own.begin(), own.end(), mine.begin() + 2);
  }
  if (sc.held_rank >= 0 && sc.held_sizes.size() == st.members)
    std::copy(sc.held_sizes.begin(), sc.held_sizes.end(),
              mine.begin() + 2 + static_cast<std::ptrdiff_t>(st.members));
  st.rows.resize(row * static_cast<std::size_t>(size()));
  FX_CHECK_MPI(comm, MPI_Allgather(mine.data(), static_cast<int>(row), MPI_UINT64_T, st.rows.data(),
                                   static_cast<int>(row), MPI_UINT64_T, comm.raw()));
  return st;
}

namespace {

// The rank holding q's copy, or -1.
int holder_of(const detail::StaticState& all, int q, int n) {
  for (int h = 0; h < n; ++h)
    if (all.held_rank(h) == q) return h;
  return -1;
}

// Every rank derives the same streams: a rank without its data gets it
// from whoever holds it; a buddy without the copy gets it from the owner
// (or, when the owner is being restored too, from the same holder). Ranks
// whose data nobody has go to `lost`.
std::vector<Stream> static_restore_streams(const detail::StaticState& all, int n, int d,
                                           std::vector<int>& lost) {
  std::vector<Stream> streams;
  for (int q = 0; q < n; ++q) {
    const bool own = all.own(q);
    const int h = holder_of(all, q, n);
    const int b = detail::buddy_of(q, n, d);
    if (!own && h < 0) {
      lost.push_back(q);  // the app rebuilds it; the next commit publishes everyone's again
      continue;
    }
    if (!own) streams.push_back({q, h, q, detail::kTagStatic, all.held_sizes(h)});
    if (all.held_rank(b) != q)
      streams.push_back(
          {q, own ? q : h, b, detail::kTagStaticHeld, own ? all.own_sizes(q) : all.held_sizes(h)});
  }
  return streams;
}

}  // namespace

std::uint64_t DataStore::Impl::restore_statics(std::vector<int>& lost) {
  const int n = size();
  lost.clear();
  if (statics.empty()) return 0;
  if (n < 2) {  // no buddy: only the app's memory can hold them
    if (!sc.own) lost.push_back(0);
    return 0;
  }
  const int r = rank();
  const detail::StaticState all = gather_static_state();
  sc.own = all.own(r);
  std::vector<Stream> streams = static_restore_streams(all, n, std::max(distance, 1), lost);
  // A rank's own data before it resumes; the buddies' copies once it has.
  std::vector<Stream> own;
  sc.deferred.clear();
  for (auto& s : streams)
    if (s.from == r || s.to == r) (s.owner == s.to ? own : sc.deferred).push_back(std::move(s));
  const std::uint64_t received = run_static_streams(own);
  sc.publish_due = !lost.empty();
  return received;
}

void DataStore::Impl::reset_statics(int size) {
  sc.size = size;
  sc.held.clear();
  sc.held_sizes.clear();
  sc.held_rank = -1;
  sc.deferred.clear();
  sc.publish_due = true;
}

}  // namespace fx
