#pragma once
// Raw-ULFM building blocks shared by the substrate tests, the substrate
// benchmark and the substrate demo: deterministic kills with a kill stamp,
// timing statistics, and a spare-based repair loop (revoke, shrink, agree,
// split keyed by logical rank) written directly against fx::ulfm.
//
// Kill stamps use fx::now() (CLOCK_MONOTONIC), which is node-wide: the
// latencies are meaningful when all processes share a node.
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

namespace fx::substrate {

// A scratch directory made by rank 0 of comm and broadcast (collective).
std::string make_shared_dir(MPI_Comm comm);
// Remove the stamps and the directory (call on one process).
void remove_shared_dir(const std::string& dir);
// Stamp fx::now() into dir/kill.<world rank>, then raise(SIGKILL).
[[noreturn]] void die_now(const std::string& dir);
// The victim's kill stamp; waits up to wait_s for the file, NaN if absent.
double kill_time(const std::string& dir, int world_rank, double wait_s = 5.0);

int world_rank();
// Number of spares the launcher was asked for ($FX_SPARES, default 0).
int env_spares();

struct Stats {
  double median = 0, min = 0, max = 0;
  std::size_t n = 0;
};
Stats summarize(std::vector<double> v);

// Time a collective over a group: from the last process entering to the
// last one leaving, so it does not include waiting for late arrivals.
double collective_ms(MPI_Comm comm, double t_in, double t_out);

// Failure-free costs on comm (every rank of comm calls; no failures).
struct CalmCosts {
  double revoke_ms = 0;  // revoke at rank 0 -> REVOKED at the last rank blocked in a receive from it
  double shrink_ms = 0;  // MPIX_Comm_shrink of a dup of comm
  double agree_ms = 0;   // MPIX_Comm_agree on comm
};
CalmCosts measure_calm(MPI_Comm comm);

enum class Role { active, spare };

struct RepairConfig {
  int active = 4;           // N logical ranks; the other world ranks are spares
  int iterations = 100;     // allreduce steps
  int kill_iteration = 30;  // the victim dies when it reaches this step
  int victim = 1;           // world rank to kill (never 0: it reports)
  double step_ms = 1.0;     // sleep per step, so the loop looks like an app
  bool verbose = false;     // narrate on the reporting process (demo)
  int progress_every = 0;   // with verbose: a line every this many steps
};

// What one repair did. Samples are gathered on the reporter (logical rank 0
// after the repair); other processes have only their own values.
struct RepairReport {
  bool reporter = false;
  bool ok = true;                     // every check passed on this process
  std::string problem;                // the first failed check, if any
  int failures_seen = 0;              // number of failed processes (after repair)
  std::vector<int> failed;            // failed world ranks
  std::vector<double> detect_ms;      // kill -> first error, active survivors
  std::vector<int> detect_error;      // the error class each survivor saw
  std::vector<double> spare_wake_ms;  // kill -> first error, idle spares
  double shrink_ms = 0, agree_ms = 0, split_ms = 0, repair_ms = 0;
  MPI_Comm live = MPI_COMM_NULL;  // the repaired world (every live process)
};

// Run the allreduce loop on N active ranks with the rest idle as spares;
// the victim dies at kill_iteration, a spare takes its logical rank and the
// loop resumes. Collective over MPI_COMM_WORLD (the victim never returns).
RepairReport run_repair(const RepairConfig& cfg);

}  // namespace fx::substrate
