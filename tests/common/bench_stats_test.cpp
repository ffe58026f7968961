// bench_stats_test.cpp: the benchmarks' median (bench_stats.h) and their synthetic batch
// (synthetic_batch.h).
//
//   ./build/solutions/tests/common/test_common --gtest_filter='BenchStats.*'
#include "bench_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "synthetic_batch.h"

namespace course {
namespace {

TEST(BenchStats, TheMedianIsAMeasuredSampleTheUpperOfTwoForAnEvenCount) {
  EXPECT_EQ(median({}), 0.0);
  EXPECT_EQ(median({4.0}), 4.0);
  EXPECT_EQ(median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 3.0);  // sorted 1 2 3 4: the upper middle
  EXPECT_EQ(median({2.0, 9.0, 9.0, 1.0, 7.0}), 7.0);
}

TEST(BenchStats, TheSyntheticBatchFollowsItsFormulaAndDiffersBySalt) {
  const auto [x, y] = synthetic_batch(5, 7, 3, /*salt=*/2);
  ASSERT_EQ(x.numel(), 35);
  ASSERT_EQ(y.numel(), 5);
  for (int64_t i = 0; i < 5; ++i) {
    EXPECT_EQ(y.data()[i], static_cast<float>((i + 2) % 3));
    for (int64_t j = 0; j < 7; ++j) {
      EXPECT_EQ(x.data()[i * 7 + j], static_cast<float>(std::sin(0.01 * (j + 1) * (i + 3 + 14))));
    }
  }
  const auto [other, unused] = synthetic_batch(5, 7, 3, /*salt=*/3);
  EXPECT_NE(other.data()[0], x.data()[0]);
}

}  // namespace
}  // namespace course
