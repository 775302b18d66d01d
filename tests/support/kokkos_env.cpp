// Kokkos up for the View members of a GoogleTest binary; under MPI, log
// lines also carry the rank.
#include <Kokkos_Core.hpp>
#include <fx/log.hpp>
#include <gtest/gtest.h>
#include <mpi.h>

namespace {
class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    Kokkos::initialize();
    int mpi = 0;
    MPI_Initialized(&mpi);
    if (mpi == 0) return;
    int r = 0, n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    fx::log::set_identity('r', r, n);
  }
  void TearDown() override { Kokkos::finalize(); }
};
[[maybe_unused]] auto* const kokkos_env = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);
}  // namespace
