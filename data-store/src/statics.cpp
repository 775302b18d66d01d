// Static members (DataStore::add_static): sent to the buddy at the first
// commit after registration, given back to recovered ranks by restore().
// Each transfer is a header (the byte count of every member) and then one
// message per member, straight from and into the app's memory.
#include <fx/data_store/store.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
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

// Headers first (both ways, so every receiver knows what to make room
// for), then the members. Returns the bytes received.
std::uint64_t DataStore::Impl::run_static_streams(std::vector<Stream>& streams) {
  const int r = rank();
  const std::size_t m = statics.size();
  {
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
  // A new held copy lands beside the old one, which may still be sent.
  std::uint64_t received = 0;
  std::vector<detail::Buffer> incoming;
  const Stream* held_stream = nullptr;
  detail::Transfer t(comm, orphans);
  for (auto& s : streams) {
    if (s.to != r && s.from != r) continue;
    const bool held_in = s.to == r && s.owner != r;
    if (held_in) {
      incoming.resize(m);
      held_stream = &s;
    }
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t n = s.sizes[i];
      if (n == 0) continue;
      if (s.to == r) {
        std::byte* dst = nullptr;
        if (held_in) {
          incoming[i].reset(n);
          dst = incoming[i].data();
        } else {
          if (n % statics[i].element != 0)
            FX_THROW(CheckpointError,
                     fmt::format("static member '{}': {} bytes from rank {} are not whole elements",
                                 statics[i].name, n, s.from));
          dst = statics[i].resize(n);
        }
        t.recv(dst, n, s.from, s.tag);
      } else {
        const std::byte* src = s.owner == r ? statics[i].contents().first : sc.held[i].data();
        t.send(src, n, s.to, s.tag);
      }
    }
    if (s.to == r) received += total(s.sizes);
  }
  try {
    t.wait();
  } catch (...) {
    keep_until_drained(incoming);
    throw;
  }
  for (const auto& s : streams)
    if (s.to == r && s.owner == r) sc.own = true;
  if (held_stream != nullptr) {
    sc.held = std::move(incoming);
    sc.held_sizes = held_stream->sizes;
    sc.held_rank = held_stream->owner;
  }
  return received;
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
  run_static_streams(streams);
  sc.publish_due = false;
  return total(static_sizes());
}

std::uint64_t DataStore::Impl::restore_statics() {
  const int n = size();
  if (statics.empty() || n < 2) return 0;
  const int r = rank();
  const int d = std::max(distance, 1);
  const std::array<int, 2> mine{sc.own ? 1 : 0, sc.held_rank};
  const auto all = comm.allgather(mine);
  sc.own = all[static_cast<std::size_t>(r)][0] == 1;
  auto holder = [&](int q) {
    for (int h = 0; h < n; ++h)
      if (all[static_cast<std::size_t>(h)][1] == q) return h;
    return -1;
  };
  // Every rank derives the same streams: a rank without its data gets it
  // from whoever holds it; a buddy without the copy gets it from the owner
  // (or, when the owner is being restored too, from the same holder).
  std::vector<Stream> streams;
  bool complete = true;
  for (int q = 0; q < n; ++q) {
    const bool own = all[static_cast<std::size_t>(q)][0] == 1;
    const int h = holder(q);
    const int b = detail::buddy_of(q, n, d);
    if (!own && h < 0) {
      complete = false;  // the app recomputes it; the next commit publishes again
      continue;
    }
    if (!own) streams.push_back({q, h, q, detail::kTagStatic, {}});
    if (all[static_cast<std::size_t>(b)][1] != q)
      streams.push_back({q, own ? q : h, b, detail::kTagStaticHeld, {}});
  }
  std::vector<Stream> mine_only;
  for (auto& s : streams)
    if (s.from == r || s.to == r) mine_only.push_back(std::move(s));
  const std::uint64_t received = run_static_streams(mine_only);
  sc.publish_due = !complete;
  if (!complete && r == 0)
    log::info("static members: some rank lost its data and its copy; published again at the next commit");
  return received;
}

void DataStore::Impl::reset_statics(int size) {
  sc.size = size;
  sc.held.clear();
  sc.held_sizes.clear();
  sc.held_rank = -1;
  sc.publish_due = true;
}

}  // namespace fx
