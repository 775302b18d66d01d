#include <fx/recovery/ulfm.hpp>
#include <fx/spares/spare_pool.hpp>

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace fx::detail {

std::vector<int> node_ids(const std::vector<std::string>& hosts) {
  std::map<std::string, int> index;  // in order of each host's lowest rank
  std::vector<int> ids;
  for (const auto& h : hosts) ids.push_back(index.emplace(h, static_cast<int>(index.size())).first->second);
  return ids;
}

std::vector<int> choose_spares(int world_size, int count, SparePlacement placement,
                               const std::vector<int>& node_of) {
  std::vector<int> spares;
  if (placement != SparePlacement::spread || node_of.empty()) {
    for (int r = world_size - count; r < world_size; ++r) spares.push_back(r);
    return spares;
  }
  std::map<int, std::vector<int>> by_node;  // highest ranks first
  for (int r = world_size - 1; r >= 0; --r) by_node[node_of[static_cast<std::size_t>(r)]].push_back(r);
  for (std::size_t round = 0; static_cast<int>(spares.size()) < count; ++round) {
    for (auto it = by_node.rbegin(); it != by_node.rend() && static_cast<int>(spares.size()) < count; ++it) {
      if (round < it->second.size()) spares.push_back(it->second[round]);
    }
  }
  std::sort(spares.begin(), spares.end());
  return spares;
}

void Watch::post(MPI_Comm world) {
  // A receive still pending on a world that a repair replaced is dropped.
  if (req_ != MPI_REQUEST_NULL) MPI_Request_free(&req_);
  MPI_Irecv(&message_, 1, MPI_INT, MPI_ANY_SOURCE, kControlTag, world, &req_);
}

bool Watch::test(int& rc) {
  if (req_ == MPI_REQUEST_NULL) return false;
  int done = 0;
  MPI_Status status;
  rc = MPI_Test(&req_, &done, &status);
  if (rc != MPI_SUCCESS) {
    // A PROC_FAILED_PENDING receive stays posted: once the failure is
    // acknowledged it can still match, so it is kept (freeing it would let
    // it swallow the next control message unseen). Other errors end it.
    if (!ulfm::is_pending(rc) && req_ != MPI_REQUEST_NULL) MPI_Request_free(&req_);
    if (!ulfm::is_pending(rc)) req_ = MPI_REQUEST_NULL;
    return true;
  }
  return done != 0;
}

void Watch::cancel() {
  if (req_ == MPI_REQUEST_NULL) return;
  MPI_Cancel(&req_);
  MPI_Request_free(&req_);
  req_ = MPI_REQUEST_NULL;
}

int idle_wait(Watch& watch, SpareIdle mode, double poll_ms) {
  int rc = MPI_SUCCESS;
  if (mode == SpareIdle::block) {
    // Note: MPI_Wait polls inside Open MPI and so keeps a core busy.
    while (!watch.test(rc)) {
    }
    return rc;
  }
  const double ms = std::max(poll_ms, 0.01);
  timespec pause{static_cast<time_t>(ms / 1000), static_cast<long>(std::fmod(ms, 1000.0) * 1e6)};
  while (!watch.test(rc)) {
    if (mode == SpareIdle::sleep)
      nanosleep(&pause, nullptr);
    else
      sched_yield();
  }
  return rc;
}

void release_spares(MPI_Comm world, const std::vector<int>& spares) {
  const int msg = kReleaseMessage;
  for (int s : spares) {
    // Ssend would wait for a spare that died meanwhile; a plain send of one
    // int completes eagerly, and a failed spare just reports an error here.
    MPI_Send(&msg, 1, MPI_INT, s, kControlTag, world);
  }
}

}  // namespace fx::detail
