#pragma once
// Who is in the job: the world communicator, the identity of each of its
// ranks, the hosts, every process lost so far, and this process's logical
// rank, logical size and role. A repair result is applied here.
#include <fx/config.hpp>
#include <fx/context.hpp>
#include <fx/recovery/repair.hpp>

#include <mpi.h>

#include <string>
#include <vector>

namespace fx::detail {

// The world ranks, and the logical ranks (-1: a spare), of `ids`.
std::vector<int> world_ranks(const std::vector<Identity>& ids);
std::vector<int> logical_ranks(const std::vector<Identity>& ids);

class Membership {
 public:
  Membership() = default;
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Collective over MPI_COMM_WORLD: duplicates it, gathers the hosts and
  // each process's visible device count, chooses the spares and numbers
  // the other ranks. Returns the app communicator (MPI_COMM_NULL on a spare).
  // The outcome is agreed: when a process died in these collectives, every
  // survivor learns it, gathers the hosts again among the living and keeps
  // the whole table over MPI_COMM_WORLD itself (no app communicator; see
  // lost_at_start()), for the repair that follows to replace the dead.
  MPI_Comm start(const SparesConfig& spares, int visible_devices);
  // start() lost a process: the world is MPI_COMM_WORLD, a repair is due;
  // start_error() is what this process's start-up call returned then
  // (MPI_ERR_OTHER when its own calls succeeded: one failed elsewhere).
  bool lost_at_start() const { return lost_at_start_; }
  int start_error() const { return start_error_; }
  void publish_identity() const;  // the log's rank prefix

  MPI_Comm world() const { return world_; }
  MPI_Comm release_world();
  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  int logical() const { return logical_; }
  int active_size() const { return active_size_; }
  Role role() const { return role_; }
  const std::vector<Identity>& members() const { return members_; }
  const std::vector<Identity>& failed() const { return failed_; }
  const std::string& host(int world_rank) const { return hosts_[static_cast<std::size_t>(world_rank)]; }
  const std::vector<std::string>& hosts() const { return hosts_; }  // by MPI_COMM_WORLD rank
  const std::vector<int>& device_counts() const { return device_counts_; }
  std::vector<int> failed_logical_ranks() const;
  std::vector<int> spare_ranks() const;  // ranks of world() that are spares
  int rank_of(int world_rank) const;     // rank of world(), -1: not a member
  // Acknowledges the world's failures; true while an active rank lives.
  bool active_rank_alive();
  // The live active rank with the lowest logical rank (every active rank
  // holds the whole record), or, with no active rank left, the lowest live
  // process: who writes the verdict and the report.
  bool speaks_for_job() const;

  // A repair, in two steps. First the new world and table (the old world is
  // freed, the lost processes join failed()); returns the old table.
  std::vector<Identity> adopt(const RepairResult& res);
  // Then this process's new logical rank and size, and its role: true when
  // a spare was recruited (it has yet to run setup()).
  bool take_role(const RepairResult& res);
  // Processes that died during shutdown (ranks of world()) leave the table.
  void remove(const std::vector<int>& died);

 private:
  MPI_Comm world_ = MPI_COMM_NULL;
  std::vector<Identity> members_;   // identity of each world_ rank
  std::vector<std::string> hosts_;  // by MPI_COMM_WORLD rank
  std::vector<int> device_counts_;  // visible devices, by MPI_COMM_WORLD rank
  std::vector<Identity> failed_;    // every process lost so far
  int world_rank_ = -1;             // in MPI_COMM_WORLD
  int world_size_ = 0;
  int logical_ = -1;
  int active_size_ = 0;
  Role role_ = Role::initial;
  bool lost_at_start_ = false;
  int start_error_ = MPI_SUCCESS;

  // Fills hosts_ and device_counts_ from an allgather over comm (left
  // untouched when it fails); returns the allgather's code.
  int gather_places(MPI_Comm comm, int visible_devices);
  // After an agreed failure of the start-up collectives: the places again,
  // over MPI_COMM_WORLD shrunk until one gather succeeds everywhere.
  void gather_places_among_survivors(int visible_devices);
  void assign_roles(const SparesConfig& spares);
};

}  // namespace fx::detail
