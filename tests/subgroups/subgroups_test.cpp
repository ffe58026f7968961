// subgroups_test.cpp: new_group (common/comm/subgroups.h) on tcp (lessons 02-05) and gloo:
// disjoint groups at once, overlapping groups in turn, two groups from two threads, groups
// of one, and the named errors of ranks that create groups differently.
//
//   ctest -L subgroups     or     ./build/solutions/test_subgroups --gtest_filter='*Wrong*'
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "../collectives/suite.h"
#include "group_checks.h"

namespace course::test {
namespace {

class SubgroupSuite : public WorldSuite {};

std::vector<int> range(int first, int last) {  // [first, last)
  std::vector<int> r(last - first);
  std::iota(r.begin(), r.end(), first);
  return r;
}

bool contains(const std::vector<int>& ranks, int r) {
  return std::ranges::find(ranks, r) != ranks.end();
}

TEST_P(SubgroupSuite, DisjointGroupsAtOnce) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        Subgroups world_groups = make_subgroups(backend(), ctx);
        const int half = ctx.world / 2;
        const std::vector<std::vector<int>> halves = {range(0, half), range(half, ctx.world)};
        std::vector<std::shared_ptr<ProcessGroup>> groups;
        for (size_t h = 0; h < halves.size(); ++h) {
          groups.push_back(world_groups.new_group(halves[h], "half" + std::to_string(h)));
        }
        const size_t mine = ctx.rank < half ? 0 : 1;
        ASSERT_EQ(groups[1 - mine], nullptr) << "a non-member got a group";
        ASSERT_NE(groups[mine], nullptr);
        EXPECT_EQ(groups[mine]->rank(), ctx.rank - halves[mine][0]);
        EXPECT_EQ(groups[mine]->size(), static_cast<int>(halves[mine].size()));
        // Both halves run the same calls at the same time, with their own values (salt = h):
        // a message crossing from one half to the other would show as a wrong value.
        const uint64_t hash = exercise_group(*groups[mine], halves[mine], ctx.rank,
                                             static_cast<int>(mine), "half" + std::to_string(mine));
        expect_same_on_members(ctx.store(), "half" + std::to_string(mine), *groups[mine], hash);
      },
      suite_options());
}

TEST_P(SubgroupSuite, OverlappingGroupsInTurn) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        Subgroups world_groups = make_subgroups(backend(), ctx);
        std::vector<int> evens;
        for (int r = 0; r < ctx.world; r += 2) evens.push_back(r);
        const std::vector<std::vector<int>> lists = {range(0, ctx.world), range(0, 3), range(1, 4),
                                                     evens, range(ctx.world - 3, ctx.world)};
        std::vector<std::shared_ptr<ProcessGroup>> groups;
        for (size_t i = 0; i < lists.size(); ++i) {
          groups.push_back(world_groups.new_group(lists[i]));
          EXPECT_EQ(groups[i] != nullptr, contains(lists[i], ctx.rank)) << "group " << i;
        }
        // In creation order, each member uses the group; every rank keeps the same order.
        for (size_t i = 0; i < lists.size(); ++i) {
          if (!groups[i]) continue;
          const std::string what = "group " + std::to_string(i) + " " + format_ranks(lists[i]);
          const uint64_t hash =
              exercise_group(*groups[i], lists[i], ctx.rank, static_cast<int>(i), what);
          expect_same_on_members(ctx.store(), "overlap" + std::to_string(i), *groups[i], hash);
        }
      },
      suite_options());
}

// Two groups with a rank in common, driven at once from two threads of each rank: the
// "rows" {0,1} {2,3} ... and the "columns" {0,2,4..} {1,3,5..} (a dp x tp mesh by hand).
TEST_P(SubgroupSuite, TwoGroupsFromTwoThreads) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        Subgroups world_groups = make_subgroups(backend(), ctx);
        std::shared_ptr<ProcessGroup> row, column;
        std::vector<int> my_row, my_column;
        for (int first = 0; first < ctx.world; first += 2) {
          const std::vector<int> ranks = range(first, first + 2);
          if (auto g = world_groups.new_group(ranks, "row")) row = g, my_row = ranks;
        }
        for (int first = 0; first < 2; ++first) {
          std::vector<int> ranks;
          for (int r = first; r < ctx.world; r += 2) ranks.push_back(r);
          if (auto g = world_groups.new_group(ranks, "column")) column = g, my_column = ranks;
        }
        ASSERT_TRUE(row && column);
        uint64_t row_hash = 0, column_hash = 0;
        std::thread rows([&] {
          for (int round = 0; round < 3; ++round)
            row_hash ^= exercise_group(*row, my_row, ctx.rank, round, "row");
        });
        for (int round = 0; round < 3; ++round) {
          column_hash ^= exercise_group(*column, my_column, ctx.rank, 10 + round, "column");
        }
        rows.join();
        expect_same_on_members(ctx.store(), "row" + std::to_string(my_row[0]), *row, row_hash);
        expect_same_on_members(ctx.store(), "column" + std::to_string(my_column[0]), *column,
                               column_hash);
      },
      suite_options());
}

TEST_P(SubgroupSuite, GroupsOfOne) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        Subgroups world_groups = make_subgroups(backend(), ctx);
        for (int r = 0; r < ctx.world; ++r) {
          auto alone = world_groups.new_group({r});
          ASSERT_EQ(alone != nullptr, r == ctx.rank);
          if (!alone) continue;
          EXPECT_EQ(alone->rank(), 0);
          EXPECT_EQ(alone->size(), 1);
          exercise_group(*alone, {r}, ctx.rank, 3, "group of one " + format_ranks({r}));
        }
      },
      suite_options());
}

INSTANTIATE_TEST_SUITE_P(Backends, SubgroupSuite, testing::ValuesIn(subgroup_worlds()),
                         world_param_name);

TEST(Subgroups, WorldOfOne) {
  run_ranks(1, [](RankContext& ctx) {
    Subgroups world_groups = make_subgroups("tcp", ctx);
    auto alone = world_groups.new_group({0}, "alone");
    ASSERT_NE(alone, nullptr);
    exercise_group(*alone, {0}, ctx.rank, 1, "the world of one");
  });
}

// Runs `make_groups` on 4 ranks, each expected to throw `Expected` within a few seconds;
// returns each rank's message through `check`.
template <typename Expected>
void expect_named_error(const std::function<void(Subgroups&, int rank)>& make_groups,
                        const std::function<void(int rank, const std::string&)>& check,
                        Millis check_timeout = default_timeout()) {
  run_ranks(
      4,
      [&](RankContext& ctx) {
        Subgroups world_groups = make_subgroups("tcp", ctx, "subgroups", check_timeout);
        const auto start = std::chrono::steady_clock::now();
        try {
          make_groups(world_groups, ctx.rank);
          ADD_FAILURE() << "rank " << ctx.rank << " made its groups without an error";
        } catch (const Expected& e) {
          check(ctx.rank, e.what());
        }
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
      },
      suite_options(30));
}

TEST(Subgroups, WrongOrderIsNamed) {
  // Ranks 0 and 1 make {0,1} first; ranks 2 and 3 make {2,3} first.
  expect_named_error<ConfigError>(
      [](Subgroups& world_groups, int rank) {
        const std::vector<int> a = {0, 1}, b = {2, 3};
        world_groups.new_group(rank < 2 ? a : b);
        world_groups.new_group(rank < 2 ? b : a);
      },
      [](int rank, const std::string& what) {
        EXPECT_NE(what.find("new_group #1"), std::string::npos) << what;
        const std::string other = rank < 2 ? "ranks {2,3} made it as 'group1' ranks {2,3}"
                                           : "ranks {0,1} made it as 'group1' ranks {0,1}";
        EXPECT_NE(what.find(other), std::string::npos) << what;
        EXPECT_NE(what.find("same order"), std::string::npos) << what;
      });
}

TEST(Subgroups, WrongMembersAreNamed) {
  // Rank 3 lists {0,1,3} where the others list {0,1,2}.
  expect_named_error<ConfigError>(
      [](Subgroups& world_groups, int rank) {
        world_groups.new_group(rank == 3 ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1, 2},
                               "tp");
      },
      [](int rank, const std::string& what) {
        EXPECT_NE(what.find("new_group #1 'tp'"), std::string::npos) << what;
        const std::string other = rank == 3 ? "ranks {0,1,2} made it as 'tp' ranks {0,1,2}"
                                            : "rank 3 made it as 'tp' ranks {0,1,3}";
        EXPECT_NE(what.find(other), std::string::npos) << what;
      });
}

TEST(Subgroups, MissingRankIsNamed) {
  // Rank 3 makes no group: the others name it after the check's timeout (2 s here).
  run_ranks(
      4,
      [](RankContext& ctx) {
        Subgroups world_groups = make_subgroups("tcp", ctx, "subgroups", Millis(2000));
        if (ctx.rank == 3) return;
        try {
          world_groups.new_group({0, 1});
          ADD_FAILURE() << "new_group returned without rank 3";
        } catch (const TimeoutError& e) {
          EXPECT_NE(std::string(e.what()).find("rank 3 did not create group #1"), std::string::npos)
              << e.what();
        }
      },
      suite_options(30));
}

TEST(Subgroups, BadListsAreRefused) {
  run_ranks(1, [](RankContext& ctx) {
    Subgroups world_groups = make_subgroups("tcp", ctx);
    for (const std::vector<int>& bad :
         {std::vector<int>{}, std::vector<int>{1}, std::vector<int>{0, 0}, std::vector<int>{-1}}) {
      try {
        world_groups.new_group(bad);
        ADD_FAILURE() << format_ranks(bad) << " was accepted in a world of 1";
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("increasing order"), std::string::npos) << e.what();
      }
    }
    EXPECT_EQ(world_groups.count(), 0) << "a refused list counted as a group";
    EXPECT_NE(world_groups.new_group({0}), nullptr);
  });
  EXPECT_THROW(group_maker("carrier-pigeon", GroupRecipe{}), ConfigError);
}

}  // namespace
}  // namespace course::test
