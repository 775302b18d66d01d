// Kokkos must be up for the View members.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

namespace {
class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
[[maybe_unused]] auto* const kokkos_env = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);
}  // namespace
