#pragma once
// The repair protocol: from a revoked world with dead processes to a new
// world and an app communicator of the same size (spares promoted into the
// dead ranks' places), or a smaller one when spares run out and the policy
// says shrink. Every live process calls repair() together.
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace fx::detail {

// One process of the current world: its MPI_COMM_WORLD rank and logical
// rank (-1: spare). The runtime keeps this table identical on every process:
// the repair derives who is alive from it without an exchange.
struct Identity {
  int world_rank = -1;
  int logical = -1;
};

// Bits of RepairRequest::carried (0..kCarriedBits-1).
constexpr int kCarriedBits = 8;

struct RepairRequest {
  MPI_Comm world = MPI_COMM_NULL;  // revoked or not; not freed here
  std::vector<Identity> members;   // identity of each rank of `world` (or of a world it came from)
  int my_logical = -1;
  bool my_fatal = false;  // this process ends the job
  int active_size = 0;    // logical size before the failure
  bool shrink_when_exhausted = false;
  int max_rounds = 10;
  // The caller's own bits, ANDed over the live processes by the repair's
  // agreement on the outcome (RepairResult::carried): what the caller would otherwise
  // agree on in a collective of its own right after the repair.
  int carried = 0;
  // Called in each round after its shrink, once every live process has it
  // (fault injection's repair-rebuild point: a death there interrupts the
  // round).
  std::function<void()> after_shrink;
};

// rebuild: the live table, the plan and the new app communicator; agree:
// the agreement on the outcome and the one after the shrink.
struct RepairTimes {
  double revoke = 0, shrink = 0, agree = 0, rebuild = 0;
};

struct RepairResult {
  MPI_Comm world = MPI_COMM_NULL;  // the new world (shrunk)
  MPI_Comm app = MPI_COMM_NULL;    // the new app comm (NULL for spares)
  std::vector<Identity> members;   // identity of each rank of the new world
  std::vector<Identity> failed;    // processes lost since `members`
  int my_logical = -1;
  int active_size = 0;
  bool exhausted = false;              // not enough spares, policy abort
  bool shrunk = false;                 // not enough spares, policy shrink
  bool fatal = false;                  // a process asked to end the job...
  std::vector<int> fatal_world_ranks;  // ...these (in order; only this one if a failure hid the others)
  int rounds = 0;
  int carried = 0;  // the AND of every live process's RepairRequest::carried
  RepairTimes times;
};

// The new logical rank of every member after `failed` are gone: spares (in
// world-rank order) take the lowest missing logical ranks; with too few
// spares and `shrink`, survivors are renumbered 0..n'-1 in their old order.
// Pure function, so every process derives the same plan.
struct Plan {
  std::vector<int> new_logical;  // per member of `live`
  int active_size = 0;
  bool exhausted = false;
  bool shrunk = false;
};
Plan plan_repair(const std::vector<Identity>& live, int active_size, bool shrink_when_exhausted);

// Throws fx::RecoveryFailed after max_rounds rounds each hit by a new failure.
RepairResult repair(const RepairRequest& request);

}  // namespace fx::detail
