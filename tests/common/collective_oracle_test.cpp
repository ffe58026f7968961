// collective_oracle_test.cpp: the serial answers every collective test leans on
// (collective_oracle.h): inputs depend on rank and index, and reductions are exact.
//
//   ./build/solutions/tests/common/test_common --gtest_filter='CollectiveOracle.*'
#include "collective_oracle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace course {
namespace {

// Inputs are not constant: every rank and index sees several different values.
TEST(CollectiveOracle, InputsDependOnRankAndIndex) {
  std::set<float> values;
  for (int r = 0; r < 8; ++r) {
    for (size_t i = 0; i < 64; ++i) values.insert(reduce_value(r, i));
  }
  EXPECT_EQ(values.size(), 10u);  // +-1/4, +-1/2, +-1, +-2, +-4
  EXPECT_NE(reduce_values(0, 32), reduce_values(1, 32));
  EXPECT_NE(data_value(1, 0), data_value(0, 0));
  EXPECT_NE(data_value(0, 1), data_value(0, 0));
}

// Any order of combination gives the serial answer to the bit (what lets the tests
// compare trees and rings with exact equality).
TEST(CollectiveOracle, ReductionsAreExactInAnyOrder) {
  const int world = 8;
  const size_t count = 1000;
  const std::vector<float> sum = expected_reduce(ReduceOp::SUM, world, count);
  const std::vector<float> prod = expected_reduce(ReduceOp::PRODUCT, world, count);
  for (size_t i = 0; i < count; ++i) {
    float s = 0, p = 1;
    for (int r = world - 1; r >= 0; --r) {  // the reverse order
      s += reduce_value(r, i);
      p *= reduce_value(r, i);
    }
    ASSERT_EQ(s, sum[i]) << i;
    ASSERT_EQ(p, prod[i]) << i;
  }
  const std::vector<float> avg = expected_reduce(ReduceOp::AVG, world, count);
  for (size_t i = 0; i < count; ++i) EXPECT_EQ(avg[i], sum[i] / world);
}

TEST(CollectiveOracle, CountWrongAndDescribe) {
  const std::vector<float> want{1, 2, 3};
  EXPECT_EQ(count_wrong(want, want), 0u);
  EXPECT_EQ(count_wrong(std::vector<float>{1, 5, 3}, want), 1u);
  EXPECT_EQ(count_wrong(std::vector<float>{1, 2}, want), 1u);
  EXPECT_EQ(count_wrong(std::vector<float>{1, 2, 3.000001f}, want, 1e-6f), 0u);
  EXPECT_EQ(describe_wrong(std::vector<float>{1, 5, 3}, want),
            "1 of 3 elements differ; first at [1]: got 5, expected 2");
}

}  // namespace
}  // namespace course
