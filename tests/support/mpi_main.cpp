// GoogleTest main for multi-rank tests. Only world rank 0 prints the
// results; every live rank's verdict is combined with an agreement (which
// works after failures), and the combined verdict becomes the exit status.
#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

namespace {
// Ranks other than 0 print only their failed assertions, rank-tagged, so a
// failure on any rank is visible in the test log.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                 r.line_number(), r.message());
    std::fflush(stderr);
  }

 private:
  int rank_;
};
}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, fx::ulfm::kThreadLevelAsked, &provided);  // as fx::run
  fx::ulfm::prepare_process();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  const int local = RUN_ALL_TESTS();

  // Survivors only: shrink drops whoever a test killed.
  MPI_Comm live = MPI_COMM_WORLD;
  bool failures = false;
  if (fx::ulfm::active()) {
    MPI_Comm shrunk = MPI_COMM_NULL;
    if (fx::ulfm::shrink(MPI_COMM_WORLD, &shrunk) == MPI_SUCCESS) {
      live = shrunk;
      int n_world = 0, n_live = 0;
      MPI_Comm_size(MPI_COMM_WORLD, &n_world);
      MPI_Comm_size(live, &n_live);
      failures = n_live != n_world;
    }
  }
  int ok = local == 0 ? 1 : 0;
  fx::ulfm::agree(live, &ok);
  int live_rank = 0;
  MPI_Comm_rank(live, &live_rank);
  if (!ok && local == 0 && live_rank == 0) std::fprintf(stderr, "[fx test] a test failed on another rank\n");
  if (live_rank == 0)
    fx::detail::write_status(ok ? fx::ExitCode::ok : fx::ExitCode::error, ok ? "passed" : "failed");
  fx::detail::shutdown(live, failures, ok ? 0 : 1);
  return ok ? 0 : 1;
}
