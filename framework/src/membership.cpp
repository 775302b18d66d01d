#include "membership.hpp"

#include <fx/detail/status.hpp>

#include <fx/log.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx/spares/spare_pool.hpp>

#include <algorithm>

#include "comm_registry.hpp"

namespace fx::detail {

std::vector<int> world_ranks(const std::vector<Identity>& ids) {
  std::vector<int> out;
  for (const auto& i : ids) out.push_back(i.world_rank);
  return out;
}

std::vector<int> logical_ranks(const std::vector<Identity>& ids) {
  std::vector<int> out;
  for (const auto& i : ids) out.push_back(i.logical);
  return out;
}

MPI_Comm Membership::start(const SparesConfig& spares, int visible_devices) {
  MPI_Comm_dup(MPI_COMM_WORLD, &world_);
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &world_rank_);
  MPI_Comm_size(world_, &world_size_);

  // Host names and device counts in one collective.
  struct Place {
    char host[MPI_MAX_PROCESSOR_NAME];
    int devices;
  };
  Place mine{};
  int len = 0;
  MPI_Get_processor_name(mine.host, &len);
  mine.devices = visible_devices;
  std::vector<Place> all(static_cast<std::size_t>(world_size_));
  MPI_Allgather(&mine, sizeof(Place), MPI_BYTE, all.data(), sizeof(Place), MPI_BYTE, world_);
  for (const Place& p : all) {
    hosts_.emplace_back(p.host);
    device_counts_.push_back(p.devices);
  }

  const auto spare_ranks = choose_spares(world_size_, spares.count, spares.placement, node_ids(world_));
  int next = 0;
  for (int r = 0; r < world_size_; ++r) {
    const bool spare = std::binary_search(spare_ranks.begin(), spare_ranks.end(), r);
    members_.push_back({r, spare ? -1 : next++});
  }
  active_size_ = world_size_ - spares.count;
  logical_ = members_[static_cast<std::size_t>(world_rank_)].logical;
  role_ = logical_ < 0 ? Role::spare : launch_attempt() > 1 ? Role::restarted : Role::initial;

  MPI_Comm app = MPI_COMM_NULL;
  MPI_Comm_split(world_, logical_ >= 0 ? 0 : MPI_UNDEFINED, logical_, &app);
  if (app != MPI_COMM_NULL) MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
  return app;
}

void Membership::publish_identity() const {
  if (logical_ >= 0)
    log::set_identity('r', logical_, active_size_);
  else
    log::set_identity('s', world_rank_, world_size_);
}

MPI_Comm Membership::release_world() {
  MPI_Comm w = world_;
  world_ = MPI_COMM_NULL;
  return w;
}

std::vector<int> Membership::failed_logical_ranks() const {
  std::vector<int> out;
  for (const auto& f : failed_) {
    if (f.logical >= 0) out.push_back(f.logical);
  }
  return out;
}

std::vector<int> Membership::spare_ranks() const {
  std::vector<int> spares;
  for (std::size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].logical < 0) spares.push_back(static_cast<int>(r));
  }
  return spares;
}

int Membership::rank_of(int world_rank) const {
  for (std::size_t r = 0; r < members_.size(); ++r)
    if (members_[r].world_rank == world_rank) return static_cast<int>(r);
  return -1;
}

bool Membership::active_rank_alive() {
  std::vector<int> failed;
  if (ulfm::ack_failed(world_, failed) != MPI_SUCCESS) return false;
  for (std::size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].logical >= 0 &&
        std::find(failed.begin(), failed.end(), static_cast<int>(r)) == failed.end())
      return true;
  }
  return false;
}

bool Membership::speaks_for_job() const {
  const bool any_active =
      std::any_of(members_.begin(), members_.end(), [](const Identity& m) { return m.logical >= 0; });
  if (!any_active) {
    return std::all_of(members_.begin(), members_.end(),
                       [this](const Identity& m) { return m.world_rank >= world_rank_; });
  }
  if (logical_ < 0) return false;
  return std::none_of(members_.begin(), members_.end(),
                      [this](const Identity& m) { return m.logical >= 0 && m.logical < logical_; });
}

std::vector<Identity> Membership::adopt(const RepairResult& res) {
  free_comm(world_);
  world_ = res.world;
  std::vector<Identity> old = std::move(members_);
  members_ = res.members;
  failed_.insert(failed_.end(), res.failed.begin(), res.failed.end());
  return old;
}

bool Membership::take_role(const RepairResult& res) {
  const Role before = role_;
  logical_ = res.my_logical;
  active_size_ = res.active_size;
  if (logical_ < 0)
    role_ = Role::spare;
  else
    role_ = before == Role::spare ? Role::recovered : Role::survivor;
  return role_ == Role::recovered;
}

void Membership::remove(const std::vector<int>& died) {
  std::vector<Identity> live;
  for (std::size_t r = 0; r < members_.size(); ++r)
    if (std::find(died.begin(), died.end(), static_cast<int>(r)) == died.end()) live.push_back(members_[r]);
  members_ = std::move(live);
}

}  // namespace fx::detail
