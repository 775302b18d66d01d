// The MPI thread level fx asks for and how a shortfall reads (issue 42: the
// copier and OpenMP threads beside the main thread, which alone calls MPI).
#include <fx/recovery/ulfm.hpp>
#include <gtest/gtest.h>

TEST(ThreadLevel, FunneledIsEnough) {
  EXPECT_EQ(fx::ulfm::kThreadLevel, MPI_THREAD_FUNNELED);
  EXPECT_EQ(fx::ulfm::thread_level_shortfall(MPI_THREAD_FUNNELED), "");
  EXPECT_EQ(fx::ulfm::thread_level_shortfall(MPI_THREAD_MULTIPLE), "");
}

TEST(ThreadLevel, SingleIsRefusedByName) {
  EXPECT_EQ(fx::ulfm::thread_level_shortfall(MPI_THREAD_SINGLE),
            "the MPI library gives thread level MPI_THREAD_SINGLE; fx needs MPI_THREAD_FUNNELED (its copier "
            "thread and the Kokkos backend's threads run beside the main thread, which alone calls MPI)");
}
