#include <gtest/gtest.h>

#include "resize_plan.hpp"

namespace {

using fx::detail::SlotSummary;

SlotSummary prior_slot(std::int64_t it, int size, int own, int held) {
  SlotSummary s;
  s.iteration = it;
  s.sequence = it / 5;
  s.size = size;
  s.own_rank = own;
  s.held_rank = held;
  s.own_bytes = own >= 0 ? 1000 + static_cast<std::uint64_t>(own) : 0;
  s.held_bytes = held >= 0 ? 2000 + static_cast<std::uint64_t>(held) : 0;
  return s;
}

// The survivors of an old ring of `old` ranks (buddy distance 1: rank r
// holds r-1's copy), renumbered in order, with the given versions.
std::vector<std::vector<SlotSummary>> survivors(int old, const std::vector<int>& alive,
                                                const std::vector<std::int64_t>& its) {
  std::vector<std::vector<SlotSummary>> inv;
  for (const int r : alive) {
    inv.emplace_back();
    for (const auto it : its) inv.back().push_back(prior_slot(it, old, r, (r + old - 1) % old));
  }
  return inv;
}

TEST(PriorPlan, OwnCopiesFirstThenBuddies) {
  // Old rank 1 died; rank 2 holds its copy.
  const auto plan = fx::detail::plan_prior(survivors(4, {0, 2, 3}, {5, 10}));
  EXPECT_EQ(plan.old_size, 4);
  EXPECT_EQ(plan.iteration, 10);
  EXPECT_EQ(plan.sequence, 2);
  ASSERT_EQ(plan.sources.size(), 4u);
  EXPECT_EQ(plan.sources[0].holder, 0);
  EXPECT_TRUE(plan.sources[0].own);
  EXPECT_EQ(plan.sources[1].holder, 1);  // new rank 1 = old rank 2, holding old 1's copy
  EXPECT_FALSE(plan.sources[1].own);
  EXPECT_EQ(plan.sources[1].bytes, 2001u);
  EXPECT_EQ(plan.sources[2].holder, 1);
  EXPECT_TRUE(plan.sources[2].own);
  EXPECT_EQ(plan.sources[3].holder, 2);
  EXPECT_TRUE(plan.lost.empty());
}

TEST(PriorPlan, NewestCompleteVersionWins) {
  // Iteration 15 was being committed when the failure hit: only rank 0 has
  // its own image of it.
  auto inv = survivors(4, {0, 2, 3}, {5, 10});
  inv[0].push_back(prior_slot(15, 4, 0, -1));
  const auto plan = fx::detail::plan_prior(inv);
  EXPECT_EQ(plan.iteration, 10);
  ASSERT_EQ(plan.lost.size(), 1u);
  EXPECT_EQ(plan.lost[0].iteration, 15);
  EXPECT_EQ(plan.lost[0].ranks, (std::vector<int>{1, 2, 3}));
}

TEST(PriorPlan, RankAndBuddyLostNamesThem) {
  // Old ranks 1 and 2 died: 1's copy was on 2.
  const auto plan = fx::detail::plan_prior(survivors(4, {0, 3}, {5, 10}));
  EXPECT_EQ(plan.old_size, 4);
  EXPECT_EQ(plan.iteration, -1);
  ASSERT_EQ(plan.lost.size(), 2u);
  EXPECT_EQ(plan.lost[0].iteration, 10);
  EXPECT_EQ(plan.lost[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(plan.lost[1].iteration, 5);
}

// Parity groups of `group` over `old` ranks: own images and parity blocks.
std::vector<std::vector<SlotSummary>> parity_survivors(int old, const std::vector<int>& alive) {
  std::vector<std::vector<SlotSummary>> inv;
  for (const int r : alive) {
    SlotSummary s = prior_slot(10, old, r, -1);
    s.parity = 1;
    s.stripe = 3072;
    inv.push_back({s});
  }
  return inv;
}

TEST(PriorPlan, ParityRebuildsOneLossPerGroup) {
  const auto plan = fx::detail::plan_prior(parity_survivors(6, {0, 2, 3, 5}), 3);
  EXPECT_EQ(plan.iteration, 10);
  ASSERT_EQ(plan.sources.size(), 6u);
  EXPECT_TRUE(plan.sources[1].parity);
  EXPECT_EQ(plan.sources[1].holder, 0);  // the group's lowest survivor
  EXPECT_EQ(plan.sources[1].bytes, 3072u);
  EXPECT_TRUE(plan.sources[4].parity);
  EXPECT_EQ(plan.sources[4].holder, 2);  // new rank 2 = old rank 3
  EXPECT_FALSE(plan.sources[0].parity);
  // Two losses in one group: not rebuildable; without parity: nothing.
  const auto two = fx::detail::plan_prior(parity_survivors(6, {0, 3, 4, 5}), 3);
  EXPECT_EQ(two.iteration, -1);
  ASSERT_EQ(two.lost.size(), 1u);
  EXPECT_EQ(two.lost[0].ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(fx::detail::plan_prior(parity_survivors(6, {0, 2, 3, 5}), 0).iteration, -1);
}

// A second shrink before the first commit at the size between: memory
// holds the versions of both sizes, and the newest complete one is taken.
TEST(PriorPlan, VersionsOfTwoSizesNewestCompleteWins) {
  // 4 ranks wrote 5; old rank 1 died, 3 ranks resumed from it and began to
  // commit 10: only new rank 0 has its image of it.
  auto inv = survivors(4, {0, 2, 3}, {5});
  inv[0].push_back(prior_slot(10, 3, 0, -1));
  const auto cut = fx::detail::plan_prior(inv);
  EXPECT_EQ(cut.iteration, 5);
  EXPECT_EQ(cut.old_size, 4);
  ASSERT_EQ(cut.lost.size(), 1u);
  EXPECT_EQ(cut.lost[0].ranks, (std::vector<int>{1, 2}));
  // Every image of 10 complete (rank r holds r-1's copy): 10, on 3 ranks.
  for (int r = 1; r < 3; ++r) inv[static_cast<std::size_t>(r)].push_back(prior_slot(10, 3, r, r - 1));
  inv[0].back().held_rank = 2;
  const auto done = fx::detail::plan_prior(inv);
  EXPECT_EQ(done.iteration, 10);
  EXPECT_EQ(done.old_size, 3);
  ASSERT_EQ(done.sources.size(), 3u);
  EXPECT_EQ(done.sources[2].holder, 2);
  // The same iteration written again by 3 ranks after the restore (a later
  // sequence): that one.
  auto again = survivors(4, {0, 2, 3}, {5});
  for (int r = 0; r < 3; ++r) {
    SlotSummary s = prior_slot(5, 3, r, (r + 2) % 3);
    s.sequence = 2;
    again[static_cast<std::size_t>(r)].push_back(s);
  }
  const auto same = fx::detail::plan_prior(again);
  EXPECT_EQ(same.iteration, 5);
  EXPECT_EQ(same.old_size, 3);
  EXPECT_EQ(same.sequence, 2);
}

TEST(PriorPlan, NothingCommittedIsAFreshStart) {
  const auto plan = fx::detail::plan_prior({{SlotSummary{}}, {SlotSummary{}}});
  EXPECT_EQ(plan.old_size, 0);
  EXPECT_EQ(plan.iteration, -1);
}

}  // namespace
