// Why fx has no `respawn` policy: after a kill, the survivors revoke and
// shrink, then MPI_Comm_spawn a replacement and merge with it. Run:
//   ./fx run -n 3 -t 15 build/bench/substrate/spawn_probe
// Measured here (Open MPI 5.0.11): spawn 1.08-1.12 s (vs ~15 ms for a
// spare taking over), and the job hung at exit in 5 of 6 runs.
#include <fx/recovery/ulfm.hpp>

#include <mpi.h>
#include <signal.h>
#include <time.h>

#include <cstdio>

namespace {
double now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent = MPI_COMM_NULL;
  MPI_Comm_get_parent(&parent);
  int v = 1, sum = 0;
  if (parent != MPI_COMM_NULL) {  // the replacement
    MPI_Comm merged = MPI_COMM_NULL;
    MPI_Intercomm_merge(parent, 1, &merged);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, merged);
    MPI_Finalize();
    return 0;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == size - 1) raise(SIGKILL);
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const double t0 = now();
  fx::ulfm::revoke(MPI_COMM_WORLD);
  MPI_Comm shrunk = MPI_COMM_NULL;
  fx::ulfm::shrink(MPI_COMM_WORLD, &shrunk);
  const double t_shrink = now() - t0;
  MPI_Comm inter = MPI_COMM_NULL;
  int err = 0;
  const int rc = MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, shrunk, &inter, &err);
  const double t_spawn = now() - t0;
  MPI_Comm merged = MPI_COMM_NULL;
  if (rc == MPI_SUCCESS) MPI_Intercomm_merge(inter, 0, &merged);
  if (merged != MPI_COMM_NULL) MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, merged);
  if (rank == 0)
    std::printf("spawn_probe: {spawn_rc: %d, shrink_ms: %.1f, spawn_ms: %.1f, resumed_ms: %.1f, sum: %d}\n",
                rc, t_shrink * 1e3, t_spawn * 1e3, (now() - t0) * 1e3, sum);
  std::fflush(stdout);
  MPI_Finalize();  // the hang to show: no workaround on purpose
  return 0;
}
