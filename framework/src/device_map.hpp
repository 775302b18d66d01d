#pragma once
// Which device each process of the job uses: the same table on every
// process, derived from the membership alone, so a repair needs no
// exchange. In logical-rank order each active rank takes the device of its
// host that the fewest live ranks use (the lowest index on a tie): round
// robin over a host's devices by node-local rank, several ranks to a device
// when ranks outnumber devices. A recruited spare takes its predecessor's
// device when it runs on the same host, else its host's least used one.
// Spares hold none. Indices are into each process's visible devices
// (CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES / KOKKOS_VISIBLE_DEVICES
// respected), which the processes of a host are expected to share.
#include <fx/recovery/repair.hpp>

#include <string>
#include <vector>

namespace fx::detail {

class DeviceMap {
 public:
  // `hosts` and `counts` (visible devices) by MPI_COMM_WORLD rank;
  // `members`: the start's table (logical -1: a spare).
  void start(std::vector<std::string> hosts, std::vector<int> counts, const std::vector<Identity>& members);
  // A repair: the `failed` give their devices up, and the spares that
  // `after` recruits (they were spares in `before`) take theirs.
  void repair(const std::vector<Identity>& before, const std::vector<Identity>& after,
              const std::vector<Identity>& failed);
  // -1: none (a spare, no device visible, or the map was never started).
  int device(int world_rank) const;
  // "device 1 of 2, its predecessor's (world rank 1)", "device 0 of 2, the
  // least used on host a", "no device visible": for the log.
  std::string describe(int world_rank) const;

 private:
  void take(int world_rank, int predecessor);
  int least_used(int world_rank) const;

  std::vector<std::string> hosts_;
  std::vector<int> counts_;
  std::vector<int> device_;     // by world rank: the device it uses or, once lost, used
  std::vector<bool> live_;      // an active process alive
  std::vector<int> inherited_;  // by world rank: the predecessor whose device it took, -1: none
};

}  // namespace fx::detail
