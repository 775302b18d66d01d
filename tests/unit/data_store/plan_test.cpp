#include <gtest/gtest.h>

#include "plan.hpp"

namespace {

using fx::detail::Inventory;
using fx::detail::SlotSummary;
using fx::detail::Source;

SlotSummary slot(std::int64_t it, int size, int own, int held, int parity = 0) {
  SlotSummary s;
  s.iteration = it;
  s.sequence = it / 10;
  s.size = size;
  s.own_rank = own;
  s.held_rank = held;
  s.parity = parity;
  s.own_bytes = own >= 0 ? 1000 + own : 0;
  s.own_header = 4096;
  s.held_bytes = held >= 0 ? 1000 + held : 0;
  s.held_header = 4096;
  s.stripe = parity ? 3072 : 0;
  return s;
}

// n ranks with buddy copies (distance d) of the given iterations.
std::vector<Inventory> buddy_ring(int n, int d, std::vector<std::int64_t> its) {
  std::vector<Inventory> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    all[static_cast<std::size_t>(r)].sequence = 5;
    for (auto it : its) {
      all[static_cast<std::size_t>(r)].slots.push_back(slot(it, n, r, fx::detail::buddy_source(r, n, d)));
    }
  }
  return all;
}

TEST(Plan, EveryRankFromItsOwnCopy) {
  const auto plan = fx::detail::plan_restore(buddy_ring(4, 1, {10, 20}), 1, false, 0);
  EXPECT_EQ(plan.iteration, 20);
  EXPECT_TRUE(plan.history);
  for (const auto& rp : plan.ranks) {
    EXPECT_EQ(rp.source, Source::own);
    EXPECT_EQ(rp.protect_to, -1);
  }
}

TEST(Plan, RecoveredRankPullsFromItsBuddyAndIsProtectedAgain) {
  auto all = buddy_ring(4, 1, {10, 20});
  all[2] = Inventory{};  // rank 2 is a recruited spare
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);
  EXPECT_EQ(plan.iteration, 20);
  EXPECT_EQ(plan.sequence, 2);
  EXPECT_EQ(plan.ranks[2].source, Source::buddy);
  EXPECT_EQ(plan.ranks[2].holder, 3);
  EXPECT_EQ(plan.ranks[2].bytes, 1002u);
  // Rank 2 held rank 1's copy: rank 1 sends it again; rank 3 still holds 2's.
  EXPECT_EQ(plan.ranks[1].protect_to, 2);
  EXPECT_EQ(plan.ranks[1].protect_from, 1);
  EXPECT_EQ(plan.ranks[1].bytes, 1001u);  // the size rank 2 must receive
  EXPECT_EQ(plan.ranks[2].protect_to, -1);
  EXPECT_EQ(plan.ranks[0].protect_to, -1);
}

TEST(Plan, DisagreementOnTheNewestVersionFallsBackToTheCommonOne) {
  // The failure hit the commit of 30: ranks 0 and 1 have it, 2 and 3 do not.
  auto all = buddy_ring(4, 1, {20});
  all[0].slots.push_back(slot(30, 4, 0, -1));  // rank 3's copy never arrived
  all[1].slots.push_back(slot(30, 4, 1, 0));
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);
  EXPECT_EQ(plan.iteration, 20);
  EXPECT_EQ(plan.lost_iteration, 30);
  EXPECT_EQ(plan.lost, (std::vector<int>{2, 3}));
}

TEST(Plan, CompleteButUnagreedVersionIsUsedWhenEveryoneHasIt) {
  auto all = buddy_ring(3, 1, {20, 30});
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);
  EXPECT_EQ(plan.iteration, 30);
}

TEST(Plan, RankAndItsBuddyLostMeansNothingInMemory) {
  auto all = buddy_ring(4, 1, {10, 20});
  all[1] = Inventory{};
  all[2] = Inventory{};  // holds rank 1's copy
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);
  EXPECT_EQ(plan.iteration, -1);
  EXPECT_TRUE(plan.history);
  EXPECT_EQ(plan.lost, std::vector<int>{1});
  EXPECT_EQ(plan.unrecoverable, std::vector<int>{1});
}

TEST(Plan, UnrecoverableRanksAreThoseWithoutAnyVersion) {
  // Ranks 1 and 2 died in the commit of 30 (ranks 0 and 3 have it); rank 2
  // held rank 1's copies.
  auto all = buddy_ring(4, 1, {20, 25});
  all[0].slots.push_back(slot(30, 4, 0, -1));
  all[3].slots.push_back(slot(30, 4, 3, -1));
  all[1] = Inventory{};
  all[2] = Inventory{};
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);
  EXPECT_EQ(plan.iteration, -1);
  EXPECT_EQ(plan.lost, (std::vector<int>{1, 2}));
  EXPECT_EQ(plan.unrecoverable, std::vector<int>{1});
}

TEST(Plan, ColdStartHasNoHistory) {
  const auto plan = fx::detail::plan_restore(std::vector<Inventory>(3), 1, false, 0);
  EXPECT_EQ(plan.iteration, -1);
  EXPECT_FALSE(plan.history);
  EXPECT_TRUE(plan.lost.empty());
}

TEST(Plan, VersionsOfAnotherSizeAreIgnored) {
  auto all = buddy_ring(3, 1, {10});
  for (auto& inv : all) inv.slots[0].size = 4;
  EXPECT_EQ(fx::detail::plan_restore(all, 1, false, 0).iteration, -1);
}

// Resumed from storage at another size, nothing of this size committed
// since: one rank saying so (a recruit does not) makes it the plan's, so
// that every rank resizes the stored version again.
TEST(Plan, AResizedStartBeforeItsFirstCommitIsEveryonesFact) {
  std::vector<Inventory> all(4);
  for (auto& inv : all) inv.sequence = 2;  // the stored version's
  all[3].sequence = 0;                     // a recruit
  EXPECT_FALSE(fx::detail::plan_restore(all, 1, false, 0).resized_pending);
  all[1].resized_from_storage = true;
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);
  EXPECT_TRUE(plan.resized_pending);
  EXPECT_TRUE(plan.history);
  EXPECT_EQ(plan.iteration, -1);
}

TEST(Plan, CopyHeldAtAnOldDistanceIsFound) {
  auto all = buddy_ring(4, 2, {10});  // copies placed with distance 2
  all[0] = Inventory{};
  const auto plan = fx::detail::plan_restore(all, 1, false, 0);  // now distance 1
  EXPECT_EQ(plan.iteration, 10);
  EXPECT_EQ(plan.ranks[0].holder, 2);
  EXPECT_EQ(plan.ranks[0].protect_to, 1);
  EXPECT_EQ(plan.ranks[0].protect_from, 0);
}

// Issue 14: a spare takes a rank and the distance changes (node-aware
// placement). A rank that must receive a fresh held copy loses the one it
// holds to that receive, so it must never be asked to re-send it: every
// fresh copy comes from the rank's own restored image.
TEST(Plan, FreshCopiesNeverComeFromAHeldCopyBeingReplaced) {
  for (int n : {4, 6}) {
    for (int old_d = 1; old_d < n; ++old_d) {
      for (int new_d = 1; new_d < n; ++new_d) {
        for (int lost = 0; lost < n; ++lost) {
          auto all = buddy_ring(n, old_d, {2200});
          all[static_cast<std::size_t>(lost)] = Inventory{};  // a spare took it
          const auto plan = fx::detail::plan_restore(all, new_d, false, 0);
          ASSERT_EQ(plan.iteration, 2200);
          for (int q = 0; q < n; ++q) {
            const auto& rp = plan.ranks[static_cast<std::size_t>(q)];
            if (rp.protect_to < 0) continue;
            EXPECT_EQ(rp.protect_from, q)
                << "n " << n << " distance " << old_d << "->" << new_d << " lost " << lost;
          }
        }
      }
    }
  }
}

std::vector<Inventory> parity_groups(int n, std::int64_t it) {
  std::vector<Inventory> all(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    all[static_cast<std::size_t>(r)].sequence = 1;
    all[static_cast<std::size_t>(r)].slots.push_back(slot(it, n, r, -1, 1));
  }
  return all;
}

TEST(Plan, ParityRebuildsOneRankPerGroup) {
  auto all = parity_groups(8, 10);
  all[1] = Inventory{};
  all[6] = Inventory{};
  const auto plan = fx::detail::plan_restore(all, 1, true, 4);
  EXPECT_EQ(plan.iteration, 10);
  EXPECT_EQ(plan.ranks[1].source, Source::parity);
  EXPECT_EQ(plan.ranks[1].bytes, 3072u);
  EXPECT_EQ(plan.ranks[6].source, Source::parity);
  EXPECT_FALSE(plan.reencode_parity);
}

TEST(Plan, ParityCannotRebuildTwoInOneGroup) {
  auto all = parity_groups(8, 10);
  all[1] = Inventory{};
  all[2] = Inventory{};
  const auto plan = fx::detail::plan_restore(all, 1, true, 4);
  EXPECT_EQ(plan.iteration, -1);
  EXPECT_EQ(plan.lost, (std::vector<int>{1, 2}));
}

TEST(Plan, ParityGroupsTakeTheRemainder) {
  using fx::detail::parity_group;
  EXPECT_EQ(parity_group(5, 10, 4).first, 4);
  EXPECT_EQ(parity_group(5, 10, 4).count, 6);  // 4..9: no group of 2
  EXPECT_EQ(parity_group(9, 10, 4).first, 4);
  EXPECT_EQ(parity_group(1, 3, 4).count, 3);
  EXPECT_EQ(parity_group(2, 8, 4).count, 4);
}

TEST(Plan, BuddyDistanceAvoidsTheSameHost) {
  using fx::detail::choose_buddy_distance;
  EXPECT_EQ(choose_buddy_distance({"a", "a", "a", "a"}, 1), 1);
  EXPECT_EQ(choose_buddy_distance({"a", "a", "b", "b"}, 1), 2);
  EXPECT_EQ(choose_buddy_distance({"a", "b", "a", "b"}, 1), 1);
  EXPECT_EQ(choose_buddy_distance({"a", "a", "a", "b", "b", "b"}, 1), 3);
  EXPECT_EQ(choose_buddy_distance({"a"}, 1), 0);
  EXPECT_EQ(choose_buddy_distance({"a", "a", "a"}, 5), 1);  // 5 wraps to 1 on 3 ranks
}

}  // namespace
