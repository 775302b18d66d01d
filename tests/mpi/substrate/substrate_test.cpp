// Substrate proof: real processes, real SIGKILL, raw ULFM through fx::ulfm.
// Each TEST is registered as its own ctest (one kill per launch); victims
// are never world rank 0, which prints the results.
#include <fx/clock.hpp>
#include <fx/recovery/ulfm.hpp>
#include <gtest/gtest.h>
#include <mpi-ext.h>
#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "substrate_kit.hpp"

namespace {

using fx::substrate::die_now;
using fx::substrate::kill_time;

// Upper bound for kill -> error; far below the heartbeat detector's default
// 10 s timeout, so passing proves the launcher reports local deaths at once.
double bound_ms() {
  const char* s = std::getenv("FX_SUBSTRATE_BOUND_MS");
  return s && *s ? std::atof(s) : 3000.0;
}

int error_class(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

// A private duplicate of MPI_COMM_WORLD whose errors return.
MPI_Comm dup_world() {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return c;
}

std::vector<int> iota_vec(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// Allreduce until an error; the victim dies at kill_it. Returns the error
// and stamps the time it came back.
int allreduce_until_error(MPI_Comm comm, int victim, int kill_it, const std::string& dir, double& t_err,
                          int& iteration) {
  const int me = fx::substrate::world_rank();
  for (iteration = 0; iteration < 100000; ++iteration) {
    if (me == victim && iteration == kill_it) die_now(dir);
    int v = 1;
    const int rc = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, comm);
    if (rc != MPI_SUCCESS) {
      t_err = fx::now();
      return rc;
    }
    usleep(500);
  }
  return MPI_SUCCESS;
}

// Survivors: shrink `comm` and return the shrunk communicator.
MPI_Comm shrunk(MPI_Comm comm) {
  MPI_Comm s = MPI_COMM_NULL;
  EXPECT_EQ(fx::ulfm::shrink(comm, &s), MPI_SUCCESS);
  MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
  return s;
}

}  // namespace

TEST(Substrate, UlfmIsActive) {
  ASSERT_TRUE(fx::ulfm::compiled());
  ASSERT_TRUE(fx::ulfm::active()) << "launch with mpiexec --with-ft ulfm (scripts/launch.sh)";
}

// A rank killed in the middle of an MPI_Allreduce loop: every survivor gets
// PROC_FAILED or REVOKED within the bound; the first detector PROC_FAILED.
TEST(Substrate, KillInAllreduceLoopIsDetected) {
  ASSERT_TRUE(fx::ulfm::active());
  MPI_Comm comm = dup_world();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  ASSERT_GE(size, 3);
  const int victim = size / 2;
  const std::string dir = fx::substrate::make_shared_dir(comm);
  double t_err = 0;
  int it = 0;
  const int rc = allreduce_until_error(comm, victim, 20, dir, t_err, it);
  fx::ulfm::revoke(comm);  // nobody stays blocked on a rank that moved on
  const double t_kill = kill_time(dir, victim);
  const double ms = 1e3 * (t_err - t_kill);
  const int cls = error_class(rc);
  EXPECT_TRUE(fx::ulfm::is_failure(rc)) << "rank " << rank << " got " << fx::ulfm::error_name(rc);
  EXPECT_LT(ms, bound_ms()) << "rank " << rank;
  EXPECT_GE(ms, 0.0);

  MPI_Comm s = shrunk(comm);
  int n = 0;
  MPI_Comm_size(s, &n);
  std::vector<double> lat(static_cast<std::size_t>(n));
  std::vector<int> cls_all(static_cast<std::size_t>(n)), rank_all(static_cast<std::size_t>(n));
  MPI_Allgather(&ms, 1, MPI_DOUBLE, lat.data(), 1, MPI_DOUBLE, s);
  MPI_Allgather(&cls, 1, MPI_INT, cls_all.data(), 1, MPI_INT, s);
  MPI_Allgather(&rank, 1, MPI_INT, rank_all.data(), 1, MPI_INT, s);
  int proc_failed = 0;
  for (int c : cls_all) proc_failed += (c == MPIX_ERR_PROC_FAILED || c == MPIX_ERR_PROC_FAILED_PENDING);
  EXPECT_GE(proc_failed, 1) << "somebody must have seen the death itself";
  if (rank == 0) {
    std::printf("[substrate] rank %d killed at iteration 20 (np %d); kill -> first error:\n", victim, size);
    for (int i = 0; i < n; ++i) {
      std::printf("[substrate]   rank %d: %-22s %8.2f ms\n", rank_all[static_cast<std::size_t>(i)],
                  fx::ulfm::error_name(cls_all[static_cast<std::size_t>(i)]).c_str(),
                  lat[static_cast<std::size_t>(i)]);
    }
    const auto st = fx::substrate::summarize(lat);
    std::printf("[substrate] detection median %.2f ms, min %.2f, max %.2f (bound %.0f ms)\n", st.median,
                st.min, st.max, bound_ms());
    fx::substrate::remove_shared_dir(dir);
  }
  MPI_Comm_free(&s);
}

// Revoke wakes ranks blocked in a receive from a live peer.
TEST(Substrate, RevokeInterruptsBlockedReceive) {
  ASSERT_TRUE(fx::ulfm::active());
  MPI_Comm comm = dup_world();
  MPI_Comm side = dup_world();  // to collect the results
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Barrier(comm);
  double t = 0;
  int rc = MPI_SUCCESS;
  if (rank == 0) {
    usleep(200 * 1000);  // the others are blocked by now
    t = fx::now();
    EXPECT_EQ(fx::ulfm::revoke(comm), MPI_SUCCESS);
    int x = 0;
    rc = MPI_Send(&x, 1, MPI_INT, 1, 7, comm);  // and the revoked comm stays unusable
    EXPECT_TRUE(fx::ulfm::is_revoked(rc)) << fx::ulfm::error_name(rc);
  } else {
    int x = 0;
    rc = MPI_Recv(&x, 1, MPI_INT, 0, 7, comm, MPI_STATUS_IGNORE);
    t = fx::now();
    EXPECT_TRUE(fx::ulfm::is_revoked(rc)) << "rank " << rank << ": " << fx::ulfm::error_name(rc);
  }
  std::vector<double> ts(static_cast<std::size_t>(size));
  MPI_Allgather(&t, 1, MPI_DOUBLE, ts.data(), 1, MPI_DOUBLE, side);
  for (int r = 1; r < size; ++r) {
    const double ms = 1e3 * (ts[static_cast<std::size_t>(r)] - ts[0]);
    EXPECT_LT(ms, bound_ms()) << "rank " << r;
    if (rank == 0) std::printf("[substrate] revoke -> REVOKED at rank %d: %.2f ms\n", r, ms);
  }
  MPI_Comm_free(&side);
}

// Shrink after a kill: size N-1, the survivors in their old order.
TEST(Substrate, ShrinkGivesSurvivorGroup) {
  ASSERT_TRUE(fx::ulfm::active());
  MPI_Comm comm = dup_world();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int victim = size - 2;
  const std::string dir = fx::substrate::make_shared_dir(comm);
  double t_err = 0;
  int it = 0;
  const int rc = allreduce_until_error(comm, victim, 10, dir, t_err, it);
  ASSERT_TRUE(fx::ulfm::is_failure(rc));
  fx::ulfm::revoke(comm);
  const double t0 = fx::now();
  MPI_Comm s = shrunk(comm);
  const double ms = 1e3 * (fx::now() - t0);
  int n = 0;
  MPI_Comm_size(s, &n);
  EXPECT_EQ(n, size - 1);
  std::vector<int> expect;
  for (int r = 0; r < size; ++r) {
    if (r != victim) expect.push_back(r);
  }
  EXPECT_EQ(fx::ulfm::translate(s, iota_vec(n), comm), expect);
  EXPECT_EQ(fx::ulfm::missing_ranks(comm, s), std::vector<int>{victim});
  int one = 1;
  EXPECT_EQ(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_SUM, s), MPI_SUCCESS);
  EXPECT_EQ(one, size - 1);
  if (rank == 0) {
    std::printf("[substrate] shrink %d -> %d processes, %.2f ms at rank 0\n", size, n, ms);
    fx::substrate::remove_shared_dir(dir);
  }
  MPI_Comm_free(&s);
}

// Agree: the same flag everywhere, and the failure is reported until it is
// acknowledged; works on the revoked communicator.
TEST(Substrate, AgreeIsUniformAndReportsFailure) {
  ASSERT_TRUE(fx::ulfm::active());
  MPI_Comm comm = dup_world();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int victim = 1;
  const std::string dir = fx::substrate::make_shared_dir(comm);
  double t_err = 0;
  int it = 0;
  const int rc = allreduce_until_error(comm, victim, 10, dir, t_err, it);
  ASSERT_TRUE(fx::ulfm::is_failure(rc));
  fx::ulfm::revoke(comm);

  // Rank 2 clears bit 1; the AND over survivors is 0b101 everywhere.
  int flag1 = rank == 2 ? 0b101 : 0b111;
  const int rc1 = fx::ulfm::agree(comm, &flag1);
  std::vector<int> failed;
  EXPECT_EQ(fx::ulfm::ack_failed(comm, failed), MPI_SUCCESS);
  int flag2 = rank == 2 ? 0b110 : 0b111;
  const int rc2 = fx::ulfm::agree(comm, &flag2);

  EXPECT_EQ(flag1, 0b101);
  EXPECT_EQ(flag2, 0b110);
  EXPECT_TRUE(fx::ulfm::is_proc_failed(rc1))
      << "rank " << rank << ": first agree returned " << fx::ulfm::error_name(rc1);
  EXPECT_EQ(rc2, MPI_SUCCESS) << "rank " << rank << ": agree after ack returned "
                              << fx::ulfm::error_name(rc2);

  MPI_Comm s = shrunk(comm);
  int n = 0;
  MPI_Comm_size(s, &n);
  int mine[4] = {flag1, flag2, error_class(rc1), error_class(rc2)};
  std::vector<int> all(4 * static_cast<std::size_t>(n));
  MPI_Allgather(mine, 4, MPI_INT, all.data(), 4, MPI_INT, s);
  for (int p = 1; p < n; ++p) {
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(all[4 * p + k], all[k]) << "field " << k << " differs at survivor " << p;
  }
  if (rank == 0) {
    std::printf("[substrate] agree before ack: flag %#x, %s; after ack: flag %#x, %s (all %d survivors)\n",
                flag1, fx::ulfm::error_name(rc1).c_str(), flag2, fx::ulfm::error_name(rc2).c_str(), n);
    fx::substrate::remove_shared_dir(dir);
  }
  MPI_Comm_free(&s);
}

// The acknowledged failed group names exactly the killed rank.
TEST(Substrate, AckedGroupNamesKilledRank) {
  ASSERT_TRUE(fx::ulfm::active());
  MPI_Comm comm = dup_world();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int victim = size - 1;
  const std::string dir = fx::substrate::make_shared_dir(comm);
  double t_err = 0;
  int it = 0;
  const int rc = allreduce_until_error(comm, victim, 10, dir, t_err, it);
  ASSERT_TRUE(fx::ulfm::is_failure(rc));
  fx::ulfm::revoke(comm);
  // A survivor woken by REVOKED may learn of the death a moment later.
  std::vector<int> failed;
  const double give_up = fx::now() + bound_ms() / 1e3;
  do {
    ASSERT_EQ(fx::ulfm::ack_failed(comm, failed), MPI_SUCCESS);
    if (!failed.empty()) break;
    // Failure notices are handled by MPI's progress engine: drive it.
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    usleep(1000);
  } while (fx::now() < give_up);
  EXPECT_EQ(failed, std::vector<int>{victim}) << "rank " << rank;
  // After the ack, a wildcard receive on a fresh comm is not stopped by it.
  std::vector<int> again;
  EXPECT_EQ(fx::ulfm::get_failed(comm, again), MPI_SUCCESS);
  EXPECT_EQ(again, std::vector<int>{victim});
  MPI_Comm s = shrunk(comm);
  MPI_Barrier(s);
  if (rank == 0) {
    std::printf("[substrate] acknowledged failed group of rank 0: {%d}\n", failed.empty() ? -1 : failed[0]);
    fx::substrate::remove_shared_dir(dir);
  }
  MPI_Comm_free(&s);
}

// A second failure in the middle of the repair, at a deterministic point:
// `early`, the second victim dies as the others enter the shrink; late, it
// dies just after its shrink returned (so the shrunk communicator holds a
// dead process and the validating agreement sends everyone round again).
// Either way the survivors end with a working communicator without both.
namespace {
void second_failure_scenario(bool early) {
  ASSERT_TRUE(fx::ulfm::active());
  MPI_Comm comm = dup_world();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  ASSERT_GE(size, 5);
  const int first = 2, second = size - 1;
  const std::string dir = fx::substrate::make_shared_dir(comm);
  double t_err = 0;
  int it = 0;
  const int rc = allreduce_until_error(comm, first, 10, dir, t_err, it);
  ASSERT_TRUE(fx::ulfm::is_failure(rc));
  fx::ulfm::revoke(comm);
  if (early && rank == second) die_now(dir);

  MPI_Comm cur = comm;
  int rounds = 0;
  for (; rounds < 8; ++rounds) {
    MPI_Comm s = MPI_COMM_NULL;
    ASSERT_EQ(fx::ulfm::shrink(cur, &s), MPI_SUCCESS);
    if (!early && rounds == 0 && rank == second) die_now(dir);
    MPI_Comm_set_errhandler(s, MPI_ERRORS_RETURN);
    if (cur != comm) MPI_Comm_free(&cur);
    cur = s;
    int flag = 1;
    const int arc = fx::ulfm::agree(cur, &flag);
    if (arc == MPI_SUCCESS) break;
    ASSERT_TRUE(fx::ulfm::is_failure(arc)) << fx::ulfm::error_name(arc);
    fx::ulfm::revoke(cur);
  }
  int n = 0;
  MPI_Comm_size(cur, &n);
  EXPECT_EQ(n, size - 2);
  EXPECT_EQ(fx::ulfm::missing_ranks(comm, cur), (std::vector<int>{first, second}));
  if (!early) {
    EXPECT_GE(rounds, 1) << "the shrunk communicator held a dead process; a second round was due";
  }
  int one = 1;
  EXPECT_EQ(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_SUM, cur), MPI_SUCCESS);
  EXPECT_EQ(one, size - 2);
  if (rank == 0) {
    std::printf("[substrate] ranks %d and %d killed (%s); %d shrink round(s) gave %d of %d processes\n",
                first, second, early ? "second at shrink entry" : "second right after its shrink", rounds + 1,
                n, size);
    fx::substrate::remove_shared_dir(dir);
  }
  if (cur != comm) MPI_Comm_free(&cur);
}
}  // namespace

TEST(Substrate, SecondFailureDuringShrinkIsSurvived) { second_failure_scenario(true); }
TEST(Substrate, SecondFailureAfterShrinkIsSurvived) { second_failure_scenario(false); }

// The whole repair: a spare takes the dead rank's place, the loop resumes,
// and the job ends with every process gone and status 0 (the main's
// shutdown never calls MPI_Finalize after a failure: open-mpi/ompi#11404).
TEST(Substrate, SpareRepairResumesLoop) {
  ASSERT_TRUE(fx::ulfm::active());
  const int spares = fx::substrate::env_spares();
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ASSERT_GE(spares, 1);
  fx::substrate::RepairConfig cfg;
  cfg.active = size - spares;
  cfg.victim = cfg.active - 1;
  cfg.iterations = 60;
  cfg.kill_iteration = 20;
  const auto rep = fx::substrate::run_repair(cfg);
  EXPECT_TRUE(rep.ok) << rep.problem;
  EXPECT_EQ(rep.failed, std::vector<int>{cfg.victim});
  if (rep.reporter) {
    for (double ms : rep.detect_ms) EXPECT_LT(ms, bound_ms());
    for (double ms : rep.spare_wake_ms) EXPECT_LT(ms, bound_ms());
    const auto d = fx::substrate::summarize(rep.detect_ms);
    const auto w = fx::substrate::summarize(rep.spare_wake_ms);
    std::printf(
        "[substrate] %d+%d: detection median %.1f ms (min %.1f, max %.1f), spares woke in %.1f-%.1f ms\n",
        cfg.active, spares, d.median, d.min, d.max, w.min, w.max);
    std::printf("[substrate] shrink %.2f ms, agree %.2f ms, split %.2f ms; kill -> resumed %.1f ms\n",
                rep.shrink_ms, rep.agree_ms, rep.split_ms, rep.repair_ms);
  }
  MPI_Comm live = rep.live;
  MPI_Comm_free(&live);
}
