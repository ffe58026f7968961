// reduce_op_test.cpp: lesson 04's element-wise combine, one op at a time, by hand.
//
//   ./build/solutions/test_04 --gtest_filter='ReduceOp.*'
#include "reduce_op.h"

#include <gtest/gtest.h>

#include <vector>

#include "error.h"

namespace course {
namespace {

std::vector<float> apply(ReduceOp op, std::vector<float> acc, const std::vector<float>& in) {
  reduce_op_apply(op, acc, in);
  return acc;
}

const std::vector<float> kAcc{1.0f, -2.0f, 4.0f, 0.5f};
const std::vector<float> kIn{2.0f, 1.0f, -3.0f, 0.5f};

TEST(ReduceOp, SumProductMinMax) {
  EXPECT_EQ(apply(ReduceOp::SUM, kAcc, kIn), (std::vector<float>{3.0f, -1.0f, 1.0f, 1.0f}));
  EXPECT_EQ(apply(ReduceOp::PRODUCT, kAcc, kIn), (std::vector<float>{2.0f, -2.0f, -12.0f, 0.25f}));
  EXPECT_EQ(apply(ReduceOp::MIN, kAcc, kIn), (std::vector<float>{1.0f, -2.0f, -3.0f, 0.5f}));
  EXPECT_EQ(apply(ReduceOp::MAX, kAcc, kIn), (std::vector<float>{2.0f, 1.0f, 4.0f, 0.5f}));
}

// AVG combines as SUM; reduce_op_finish divides by the world size once, at the end.
TEST(ReduceOp, AverageIsSumThenOneDivision) {
  std::vector<float> acc = apply(ReduceOp::AVG, kAcc, kIn);
  EXPECT_EQ(acc, (std::vector<float>{3.0f, -1.0f, 1.0f, 1.0f}));
  reduce_op_apply(ReduceOp::AVG, acc, std::vector<float>{3.0f, 4.0f, 2.0f, 1.0f});
  reduce_op_finish(ReduceOp::AVG, acc, 3);
  EXPECT_EQ(acc, (std::vector<float>{2.0f, 1.0f, 1.0f, 2.0f / 3.0f}));
}

TEST(ReduceOp, FinishLeavesOtherOpsAlone) {
  for (ReduceOp op : {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
    std::vector<float> acc = kAcc;
    reduce_op_finish(op, acc, 4);
    EXPECT_EQ(acc, kAcc) << reduce_op_name(op);
  }
}

TEST(ReduceOp, EmptyBuffersAndSizeMismatch) {
  std::vector<float> empty;
  reduce_op_apply(ReduceOp::SUM, empty, {});
  reduce_op_finish(ReduceOp::AVG, empty, 2);
  std::vector<float> acc(3);
  EXPECT_THROW(reduce_op_apply(ReduceOp::SUM, acc, std::vector<float>(4)), ConfigError);
}

}  // namespace
}  // namespace course
