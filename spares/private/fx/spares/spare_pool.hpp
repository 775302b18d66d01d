#pragma once
// Spare processes: which world ranks are spares, how they wait without
// stealing CPU from the workers, and how they are woken or released.
#include <fx/spares/options.hpp>
#include <mpi.h>

#include <string>
#include <vector>

namespace fx::detail {

// Control messages on the world communicator (the only traffic spares see).
inline constexpr int kControlTag = 0x0f0f;
inline constexpr int kReleaseMessage = 1;

// World ranks chosen as spares. "last": the last `count` ranks; "spread":
// round-robin over nodes, taking each node's highest ranks first, so a node
// loss leaves spares elsewhere. Deterministic: every rank computes the same.
// `node_of` gives each world rank's node index (see node_ids()).
std::vector<int> choose_spares(int world_size, int count, SparePlacement placement,
                               const std::vector<int>& node_of);
// A node index per rank from each rank's host name (0, 1, ... in order of
// each host's lowest rank): local, so start-up needs no collective for it.
std::vector<int> node_ids(const std::vector<std::string>& hosts);

// A receive posted on the world for control messages. Failures of any
// process in the world and revocations complete it with an error, which is
// how both idle spares and (at step boundaries) workers learn of them.
class Watch {
 public:
  void post(MPI_Comm world);
  // Non-blocking. True when something arrived: `rc` is MPI_SUCCESS with a
  // control message, or the error that completed the receive.
  bool test(int& rc);
  // Drop the pending receive (at shutdown or before re-posting).
  void cancel();
  int message() const { return message_; }
  bool posted() const { return req_ != MPI_REQUEST_NULL; }

 private:
  MPI_Request req_ = MPI_REQUEST_NULL;
  int message_ = 0;
};

// Idle until the watch completes. Returns its rc (MPI_SUCCESS: a control
// message, see watch.message()). `sleep` polls every poll_ms milliseconds,
// `yield` polls with sched_yield, `block` waits inside MPI (which spins).
int idle_wait(Watch& watch, SpareIdle mode, double poll_ms);

// Tell each spare (world ranks of `world`) to leave. Dead spares are skipped.
void release_spares(MPI_Comm world, const std::vector<int>& spares);

}  // namespace fx::detail
