// checkpoint.memory.every: auto (framework/src/checkpoint_interval.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "checkpoint_interval.hpp"

namespace {

using fx::detail::CheckpointInterval;

TEST(CheckpointInterval, DalyMatchesYoungToFirstOrder) {
  // d << M: sqrt(2 d M) to within the correction terms.
  const double d = 0.01, m = 3600;
  const double young = std::sqrt(2 * d * m);
  EXPECT_NEAR(fx::detail::daly_interval_s(d, m), young, young * 0.01);
  // Daly's published closed form at d = 60 s, M = 24 h.
  const double x = 60.0 / (2 * 86400.0);
  const double daly = std::sqrt(2 * 60.0 * 86400) * (1 + std::sqrt(x) / 3 + x / 9) - 60;
  EXPECT_DOUBLE_EQ(fx::detail::daly_interval_s(60, 86400), daly);
  // A commit as long as two MTBFs: checkpoint once per MTBF.
  EXPECT_DOUBLE_EQ(fx::detail::daly_interval_s(30, 10), 10);
}

TEST(CheckpointInterval, TheOptimumMinimisesTheWaste) {
  const double d = 0.05, m = 20;
  const double tau = fx::detail::daly_interval_s(d, m);
  const double at = fx::detail::expected_waste(tau, d, m);
  EXPECT_LT(at, fx::detail::expected_waste(tau / 2, d, m));
  EXPECT_LT(at, fx::detail::expected_waste(tau * 2, d, m));
}

TEST(CheckpointInterval, MtbfFollowsTheFailuresSeen) {
  EXPECT_DOUBLE_EQ(fx::detail::mtbf_estimate_s(100, 0, 0), 100);
  EXPECT_DOUBLE_EQ(fx::detail::mtbf_estimate_s(100, 3, 20), 30);  // (100 + 20) / 4
}

TEST(CheckpointInterval, FixedIntervalIsEveryKth) {
  CheckpointInterval fixed(10, false, 0);
  EXPECT_FALSE(fixed.due(5));
  EXPECT_TRUE(fixed.due(10));
  EXPECT_TRUE(fixed.due(20));
  CheckpointInterval off(0, false, 0);
  EXPECT_FALSE(off.due(10));
}

TEST(CheckpointInterval, AutoCommitsFirstAfterOneStepThenAtTheOptimum) {
  CheckpointInterval a(0, true, 50);
  EXPECT_TRUE(a.due(1));
  // d = 10 ms, step 1 ms, M = 50 s: tau ~ sqrt(2 * 0.01 * 50) = 1 s ~ 1000 steps.
  const auto& c = a.committed(1, {0.01, 0.001, 0, 0});
  EXPECT_NEAR(c.every, 1000, 40);
  EXPECT_FALSE(a.due(1 + c.every - 1));
  EXPECT_TRUE(a.due(1 + c.every));
  // A recovered rank resumes with the survivors' interval from the restored iteration.
  a.resumed(1, c.every);
  EXPECT_TRUE(a.due(1 + c.every));
  // A step longer than the optimum: every step.
  EXPECT_EQ(a.committed(5, {0.01, 10, 0, 0}).every, 1);
}

}  // namespace
