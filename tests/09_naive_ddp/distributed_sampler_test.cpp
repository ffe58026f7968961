// distributed_sampler_test.cpp: lesson 09, part 1: every rank's share of an epoch, checked
// against a serial oracle written from torch's definition (pad from the front or cut, then
// every N-th position from the rank), for lengths that do and do not divide by N.
//
//   ./build/solutions/test_09 --gtest_filter='DistributedSampler*'
#include "distributed_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "error.h"

namespace course {
namespace {

// torch's DistributedSampler.__iter__, written out over the whole world at once: the
// global order (lesson 07's RandomSampler order, or 0..n-1), padded from its front or cut
// to N * num_samples, as one list; rank r's share is every N-th entry from r.
std::vector<int64_t> padded_order(int64_t n, int world, bool shuffle, uint64_t seed, int64_t epoch,
                                  bool drop_last) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle) order = RandomSampler(n, seed).indices(epoch);
  const int64_t per_rank = drop_last ? n / world : (n + world - 1) / world;
  const auto total = static_cast<size_t>(per_rank * world);
  std::vector<int64_t> out;
  for (size_t i = 0; i < total; ++i) out.push_back(order[i % order.size()]);
  return out;
}

TEST(DistributedSampler, NumSamplesAndTotalSizeFollowTorch) {
  // n = 10, N = 4: ceil -> 3 each (12 in all, 2 repeated); drop_last: floor -> 2 (8).
  EXPECT_EQ(DistributedSampler(10, 4, 0).num_samples(), 3);
  EXPECT_EQ(DistributedSampler(10, 4, 0).total_size(), 12);
  EXPECT_EQ(DistributedSampler(10, 4, 3, true, 0, true).num_samples(), 2);
  EXPECT_EQ(DistributedSampler(10, 4, 3, true, 0, true).total_size(), 8);
  EXPECT_EQ(DistributedSampler(12, 4, 1).num_samples(), 3);
  EXPECT_EQ(DistributedSampler(12, 4, 1, true, 0, true).num_samples(), 3);
  EXPECT_EQ(DistributedSampler(3, 5, 4).num_samples(), 1);  // fewer examples than ranks
  EXPECT_EQ(DistributedSampler(3, 5, 4, false, 0, true).num_samples(), 0);
  EXPECT_EQ(DistributedSampler(0, 3, 2).num_samples(), 0);
}

TEST(DistributedSampler, PadsFromTheFrontAndStridesByRank) {
  // The picture of distributed_sampler.h with the order 0..9 (no shuffle).
  const std::vector<std::vector<int64_t>> expected{{0, 4, 8}, {1, 5, 9}, {2, 6, 0}, {3, 7, 1}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(DistributedSampler(10, 4, r, /*shuffle=*/false).indices(0), expected[r]) << r;
  }
  // drop_last cuts the tail (8 and 9) instead.
  const std::vector<std::vector<int64_t>> cut{{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(DistributedSampler(10, 4, r, false, 0, true).indices(3), cut[r]) << r;
  }
  // More padding than examples: 2 examples over 5 ranks repeat the list from its front.
  const std::vector<int64_t> tiny{0, 1, 0, 1, 0};
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(DistributedSampler(2, 5, r, false).indices(0), std::vector<int64_t>{tiny[r]}) << r;
  }
}

class DistributedSamplerWorlds : public testing::TestWithParam<int> {};

TEST_P(DistributedSamplerWorlds, EveryIndexOncePerEpochPlusPadding) {
  const int world = GetParam();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{world - 1}, int64_t{world}, int64_t{world + 1},
                    int64_t{7 * world + 3}, int64_t{100}, int64_t{101}}) {
    if (n < 0) continue;
    for (bool drop_last : {false, true}) {
      for (bool shuffle : {false, true}) {
        const std::string what = "n=" + std::to_string(n) + " N=" + std::to_string(world) +
                                 (drop_last ? " drop_last" : "") + (shuffle ? " shuffle" : "");
        const int64_t epoch = 2;
        const std::vector<int64_t> global = padded_order(n, world, shuffle, 11, epoch, drop_last);
        std::vector<int64_t> counts(static_cast<size_t>(n), 0);
        size_t seen = 0;
        for (int r = 0; r < world; ++r) {
          const DistributedSampler s(n, world, r, shuffle, 11, drop_last);
          const std::vector<int64_t> mine = s.indices(epoch);
          ASSERT_EQ(static_cast<int64_t>(mine.size()), s.num_samples()) << what << " rank " << r;
          for (size_t j = 0; j < mine.size(); ++j) {
            ASSERT_EQ(mine[j], global[j * static_cast<size_t>(world) + static_cast<size_t>(r)])
                << what << ": rank " << r << " position " << j;
            ++counts[static_cast<size_t>(mine[j])];
          }
          seen += mine.size();
        }
        EXPECT_EQ(static_cast<int64_t>(seen),
                  drop_last ? n / world * world : (n + world - 1) / world * world)
            << what;
        // Without drop_last every index at least once; no index more often than the
        // padding can repeat it (once with drop_last).
        const int64_t most = drop_last || n == 0 ? 1 : (static_cast<int64_t>(seen) + n - 1) / n;
        for (int64_t i = 0; i < n; ++i) {
          if (!drop_last) {
            EXPECT_GE(counts[static_cast<size_t>(i)], 1) << what << " index " << i;
          }
          EXPECT_LE(counts[static_cast<size_t>(i)], most) << what << " index " << i;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, DistributedSamplerWorlds, testing::Range(1, 6),
                         [](const testing::TestParamInfo<int>& info) {
                           return "N" + std::to_string(info.param);
                         });

TEST(DistributedSampler, ShufflesWithSeedPlusEpochTheSameOnEveryRank) {
  const int64_t n = 1000;
  const int world = 3;
  // Each rank's sampler is its own object (its own process, in a job): the same seed and
  // epoch give every rank its stride of one and the same order.
  for (int64_t epoch : {0, 1, 5}) {
    const std::vector<int64_t> global = padded_order(n, world, true, 42, epoch, false);
    for (int r = 0; r < world; ++r) {
      const std::vector<int64_t> mine = DistributedSampler(n, world, r, true, 42).indices(epoch);
      for (size_t j = 0; j < mine.size(); ++j) {
        ASSERT_EQ(mine[j], global[j * world + static_cast<size_t>(r)]) << "epoch " << epoch;
      }
    }
  }
  // A new order every epoch; the seed matters too.
  const DistributedSampler s(n, world, 1, true, 42);
  EXPECT_NE(s.indices(0), s.indices(1));
  EXPECT_NE(s.indices(1), s.indices(2));
  EXPECT_NE(s.indices(0), DistributedSampler(n, world, 1, true, 43).indices(0));
  // Not the file order.
  EXPECT_NE(s.indices(0), DistributedSampler(n, world, 1, false, 42).indices(0));
}

TEST(DistributedSampler, SetEpochIsWhatIndicesWithoutAnArgumentUses) {
  DistributedSampler s(50, 2, 1, true, 7);
  EXPECT_EQ(s.epoch(), 0);
  EXPECT_EQ(s.indices(), s.indices(0));
  const std::vector<int64_t> before = s.indices();
  s.set_epoch(4);
  EXPECT_EQ(s.epoch(), 4);
  EXPECT_EQ(s.indices(), s.indices(4));
  EXPECT_NE(s.indices(), before);  // without set_epoch, every epoch would repeat `before`
}

TEST(DistributedSampler, BadArgumentsAreConfigErrors) {
  EXPECT_THROW(DistributedSampler(10, 0, 0), ConfigError);
  EXPECT_THROW(DistributedSampler(10, 4, 4), ConfigError);
  EXPECT_THROW(DistributedSampler(10, 4, -1), ConfigError);
  EXPECT_THROW(DistributedSampler(-1, 4, 0), ConfigError);
}

}  // namespace
}  // namespace course
