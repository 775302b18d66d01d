#include "device_map.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace fx::detail {
namespace {

std::vector<Identity> by_logical(const std::vector<Identity>& ids) {
  std::vector<Identity> out;
  std::copy_if(ids.begin(), ids.end(), std::back_inserter(out),
               [](const Identity& m) { return m.logical >= 0; });
  std::sort(out.begin(), out.end(),
            [](const Identity& a, const Identity& b) { return a.logical < b.logical; });
  return out;
}

}  // namespace

void DeviceMap::start(std::vector<std::string> hosts, std::vector<int> counts,
                      const std::vector<Identity>& members) {
  hosts_ = std::move(hosts);
  counts_ = std::move(counts);
  device_.assign(hosts_.size(), -1);
  live_.assign(hosts_.size(), false);
  inherited_.assign(hosts_.size(), -1);
  for (const Identity& m : by_logical(members)) take(m.world_rank, -1);
}

void DeviceMap::repair(const std::vector<Identity>& before, const std::vector<Identity>& after,
                       const std::vector<Identity>& failed) {
  if (device_.empty()) return;
  for (const Identity& f : failed) live_.at(static_cast<std::size_t>(f.world_rank)) = false;
  const auto was_spare = [&](int world_rank) {
    return std::any_of(before.begin(), before.end(),
                       [&](const Identity& m) { return m.world_rank == world_rank && m.logical < 0; });
  };
  for (const Identity& m : by_logical(after)) {
    if (!was_spare(m.world_rank)) continue;
    const auto p =
        std::find_if(failed.begin(), failed.end(), [&](const Identity& f) { return f.logical == m.logical; });
    take(m.world_rank, p == failed.end() ? -1 : p->world_rank);
  }
}

int DeviceMap::device(int world_rank) const {
  const auto w = static_cast<std::size_t>(world_rank);
  return w < device_.size() && live_[w] ? device_[w] : -1;
}

std::string DeviceMap::describe(int world_rank) const {
  const int d = device(world_rank);
  if (d < 0) return "no device visible";
  const auto w = static_cast<std::size_t>(world_rank);
  if (inherited_[w] >= 0)
    return fmt::format("device {} of {}, its predecessor's (world rank {})", d, counts_[w], inherited_[w]);
  return fmt::format("device {} of {}, the least used on host {}", d, counts_[w], hosts_[w]);
}

// The predecessor's device when it ran on this host (and the index is one
// this process sees), else the host's least used.
void DeviceMap::take(int world_rank, int predecessor) {
  const auto w = static_cast<std::size_t>(world_rank);
  live_[w] = true;
  if (counts_[w] <= 0) return;
  const auto p = static_cast<std::size_t>(predecessor);
  const bool beside =
      predecessor >= 0 && hosts_[p] == hosts_[w] && device_[p] >= 0 && device_[p] < counts_[w];
  device_[w] = beside ? device_[p] : least_used(world_rank);
  inherited_[w] = beside ? predecessor : -1;
}

int DeviceMap::least_used(int world_rank) const {
  const auto w = static_cast<std::size_t>(world_rank);
  std::vector<int> users(static_cast<std::size_t>(counts_[w]), 0);
  for (std::size_t r = 0; r < device_.size(); ++r) {
    const int d = device_[r];
    if (r != w && live_[r] && hosts_[r] == hosts_[w] && d >= 0 && d < counts_[w])
      ++users[static_cast<std::size_t>(d)];
  }
  return static_cast<int>(std::min_element(users.begin(), users.end()) - users.begin());
}

}  // namespace fx::detail
