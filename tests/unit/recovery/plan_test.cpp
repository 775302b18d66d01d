// The repair plan is a pure function every process evaluates alike; these
// cases pin down who takes which logical rank.
#include <fx/recovery/repair.hpp>
#include <fx/spares/spare_pool.hpp>
#include <gtest/gtest.h>

using fx::detail::Identity;
using fx::detail::plan_repair;

TEST(PlanRepair, SpareTakesTheDeadRank) {
  // 4+2, logical 1 (world 1) died.
  const std::vector<Identity> live{{0, 0}, {2, 2}, {3, 3}, {4, -1}, {5, -1}};
  const auto plan = plan_repair(live, 4, false);
  EXPECT_FALSE(plan.exhausted);
  EXPECT_FALSE(plan.shrunk);
  EXPECT_EQ(plan.active_size, 4);
  EXPECT_EQ(plan.new_logical, (std::vector<int>{0, 2, 3, 1, -1}));
}

TEST(PlanRepair, LowestSpareFillsLowestHole) {
  const std::vector<Identity> live{{1, 1}, {3, 3}, {5, -1}, {4, -1}};
  const auto plan = plan_repair(live, 4, false);
  // World rank 4 is the lowest spare: it takes logical 0; 5 takes 2.
  EXPECT_EQ(plan.new_logical, (std::vector<int>{1, 3, 2, 0}));
}

TEST(PlanRepair, IdleSpareLossChangesNothing) {
  const std::vector<Identity> live{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {5, -1}};
  const auto plan = plan_repair(live, 4, false);
  EXPECT_EQ(plan.new_logical, (std::vector<int>{0, 1, 2, 3, -1}));
  EXPECT_FALSE(plan.exhausted);
}

TEST(PlanRepair, ExhaustedUnderAbort) {
  const std::vector<Identity> live{{0, 0}, {3, 3}, {4, -1}};
  const auto plan = plan_repair(live, 4, false);
  EXPECT_TRUE(plan.exhausted);
}

TEST(PlanRepair, ExhaustedUnderShrinkRenumbersInOrder) {
  // Logical 1 and 2 died, one spare: it fills 1, then 0,1,3 become 0,1,2.
  const std::vector<Identity> live{{0, 0}, {3, 3}, {4, -1}};
  const auto plan = plan_repair(live, 4, true);
  EXPECT_TRUE(plan.shrunk);
  EXPECT_EQ(plan.active_size, 3);
  EXPECT_EQ(plan.new_logical, (std::vector<int>{0, 2, 1}));
}

TEST(SpareChoice, LastAndSpread) {
  EXPECT_EQ(fx::detail::choose_spares(6, 2, fx::SparePlacement::last, {}), (std::vector<int>{4, 5}));
  // Two nodes of three ranks: one spare from each node's top.
  EXPECT_EQ(fx::detail::choose_spares(6, 2, fx::SparePlacement::spread, {0, 0, 0, 1, 1, 1}),
            (std::vector<int>{2, 5}));
  EXPECT_EQ(fx::detail::choose_spares(6, 0, fx::SparePlacement::spread, {0, 0, 0, 1, 1, 1}),
            (std::vector<int>{}));
}

TEST(SpareChoice, NodesAreNamedByHostInRankOrder) {
  EXPECT_EQ(fx::detail::node_ids({"b", "b", "a", "c", "a", ""}), (std::vector<int>{0, 0, 1, 2, 1, 3}));
  EXPECT_EQ(fx::detail::node_ids({}), (std::vector<int>{}));
}
