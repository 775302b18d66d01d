#include <fx/recovery/ulfm.hpp>
#include <fx/spares/spare_pool.hpp>

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace fx::detail {

std::vector<int> node_ids(MPI_Comm comm) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  // A node is named by its lowest rank; relabel 0, 1, ... in rank order.
  int leader = rank;
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  std::vector<int> leaders(static_cast<std::size_t>(size));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  std::map<int, int> index;
  for (int l : leaders) index.emplace(l, 0);
  int next = 0;
  for (auto& [l, i] : index) i = next++;
  for (int& l : leaders) l = index[l];
  return leaders;
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
