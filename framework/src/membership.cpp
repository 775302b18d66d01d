#include "membership.hpp"

#include <fx/detail/status.hpp>
#include <fx/error.hpp>

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

namespace {

// One process's place, as gathered at start-up.
struct Place {
  int world_rank;
  int devices;
  char host[MPI_MAX_PROCESSOR_NAME];
};

// Whether `ok` held on every live process of comm, the same answer on all
// of them. Without fault tolerance a failure ends the job: the local value.
bool agreed(MPI_Comm comm, bool ok) {
  if (!ulfm::active()) return ok;
  return ulfm::agree_value(comm, ok ? 1 : 0).flag != 0;
}

}  // namespace

MPI_Comm Membership::start(const SparesConfig& spares, int visible_devices) {
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size_);
  MPI_Comm dup = MPI_COMM_NULL;
  start_error_ = MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  const bool duplicated = start_error_ == MPI_SUCCESS;
  if (duplicated) {
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    start_error_ = gather_places(dup, visible_devices);
    if (start_error_ != MPI_SUCCESS) ulfm::revoke(dup);  // wakes those still waiting in it for this process
  }
  // A communicator's creation can succeed on some processes and fail on
  // others: its outcome is agreed on the parent (ULFM's rule).
  if (agreed(MPI_COMM_WORLD, start_error_ == MPI_SUCCESS)) {
    world_ = dup;
  } else {
    if (duplicated) ulfm::release(dup);
    if (!ulfm::active()) throw ProcessFailure("a process failed during start-up", {}, __FILE__, __LINE__);
    lost_at_start_ = true;
    if (start_error_ == MPI_SUCCESS) start_error_ = MPI_ERR_OTHER;  // it failed elsewhere
    world_ = MPI_COMM_WORLD;  // it holds the dead, for the repair to find them
    gather_places_among_survivors(visible_devices);
  }
  assign_roles(spares);
  MPI_Comm app = MPI_COMM_NULL;
  if (lost_at_start_) return app;
  // A failure here leaves this process without one; the start-up agreement
  // fails too, and the repair makes it.
  if (MPI_Comm_split(world_, logical_ >= 0 ? 0 : MPI_UNDEFINED, logical_, &app) != MPI_SUCCESS)
    app = MPI_COMM_NULL;
  if (app != MPI_COMM_NULL) MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
  return app;
}

int Membership::gather_places(MPI_Comm comm, int visible_devices) {
  Place mine{};
  mine.world_rank = world_rank_;
  mine.devices = visible_devices;
  int len = 0;
  MPI_Get_processor_name(mine.host, &len);
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<Place> all(static_cast<std::size_t>(size));
  const int rc = MPI_Allgather(&mine, sizeof(Place), MPI_BYTE, all.data(), sizeof(Place), MPI_BYTE, comm);
  if (rc != MPI_SUCCESS) return rc;
  // A process lost before this gather keeps an empty host name.
  hosts_.assign(static_cast<std::size_t>(world_size_), std::string());
  device_counts_.assign(static_cast<std::size_t>(world_size_), 0);
  for (const Place& p : all) {
    hosts_[static_cast<std::size_t>(p.world_rank)] = p.host;
    device_counts_[static_cast<std::size_t>(p.world_rank)] = p.devices;
  }
  return rc;
}

void Membership::gather_places_among_survivors(int visible_devices) {
  MPI_Comm living = MPI_COMM_NULL;
  // Each round that fails lost another process: at most world_size_ rounds.
  for (int round = 0; round < world_size_; ++round) {
    MPI_Comm next = MPI_COMM_NULL;
    if (ulfm::shrink(living == MPI_COMM_NULL ? MPI_COMM_WORLD : living, &next) != MPI_SUCCESS) break;
    ulfm::release(living);
    living = next;
    MPI_Comm_set_errhandler(living, MPI_ERRORS_RETURN);
    const bool ok = gather_places(living, visible_devices) == MPI_SUCCESS;
    if (!ok) ulfm::revoke(living);
    if (agreed(living, ok)) {
      ulfm::release(living);
      return;
    }
  }
  ulfm::release(living);
  throw ProcessFailure("start-up: no gather of the hosts succeeded among the survivors", {}, __FILE__,
                       __LINE__);
}

void Membership::assign_roles(const SparesConfig& spares) {
  const auto spare_ranks = choose_spares(world_size_, spares.count, spares.placement, node_ids(hosts_));
  members_.clear();
  int next = 0;
  for (int r = 0; r < world_size_; ++r) {
    const bool spare = std::binary_search(spare_ranks.begin(), spare_ranks.end(), r);
    members_.push_back({r, spare ? -1 : next++});
  }
  active_size_ = world_size_ - spares.count;
  logical_ = members_[static_cast<std::size_t>(world_rank_)].logical;
  role_ = logical_ < 0 ? Role::spare : launch_attempt() > 1 ? Role::restarted : Role::initial;
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
  ulfm::release(world_);
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
