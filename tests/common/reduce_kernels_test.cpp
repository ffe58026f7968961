// reduce_kernels_test.cpp: the element-wise reductions of common/comm/reduce_kernels.h
// against plain loops, and the ReduceOp names of common/comm/process_group.h.
//
//   ctest -L common     or     ./build/solutions/test_common --gtest_filter='ReduceKernels*'
#include "reduce_kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "error.h"
#include "process_group.h"

namespace course {
namespace {

const std::vector<ReduceOp> kOps{ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX,
                                 ReduceOp::AVG};

// Index-dependent values of both signs, none equal across the two buffers.
float left_value(size_t i) {
  return static_cast<float>(static_cast<int>(i % 7) - 3) + 0.25f;
}
float right_value(size_t i) {
  return static_cast<float>(static_cast<int>(i % 5) - 2) * 0.5f;
}

float combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return a + b;
    case ReduceOp::PRODUCT:
      return a * b;
    case ReduceOp::MIN:
      return std::min(a, b);
    case ReduceOp::MAX:
      return std::max(a, b);
  }
  return 0.0f;
}

// Sizes around the 16-float block: empty, a tail alone, one block, a block and a tail.
TEST(ReduceKernels, ReduceIntoMatchesAPlainLoopForEveryOpAndSize) {
  for (ReduceOp op : kOps) {
    for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(100)}) {
      std::vector<float> dst(n), src(n), expected(n);
      for (size_t i = 0; i < n; ++i) {
        dst[i] = left_value(i);
        src[i] = right_value(i);
        expected[i] = combine(op, dst[i], src[i]);
      }
      reduce_into(dst.data(), src.data(), n, op);
      EXPECT_EQ(dst, expected) << reduce_op_name(op) << ", " << n << " elements";
    }
  }
}

TEST(ReduceKernels, ScaleMultipliesEveryElementOnce) {
  for (size_t n : {size_t(0), size_t(3), size_t(16), size_t(33)}) {
    std::vector<float> data(n), expected(n);
    for (size_t i = 0; i < n; ++i) {
      data[i] = left_value(i);
      expected[i] = data[i] * 0.25f;
    }
    scale(data.data(), n, 0.25f);
    EXPECT_EQ(data, expected) << n << " elements";
  }
}

// The names are torch.distributed.ReduceOp's, lower case; drivers' --op flags parse them.
TEST(ReduceOpNames, AreTorchsNamesAndParseBack) {
  EXPECT_STREQ(reduce_op_name(ReduceOp::SUM), "sum");
  EXPECT_STREQ(reduce_op_name(ReduceOp::PRODUCT), "prod");
  EXPECT_STREQ(reduce_op_name(ReduceOp::MIN), "min");
  EXPECT_STREQ(reduce_op_name(ReduceOp::MAX), "max");
  EXPECT_STREQ(reduce_op_name(ReduceOp::AVG), "avg");
  for (ReduceOp op : kOps) EXPECT_EQ(parse_reduce_op(reduce_op_name(op)), op);
}

TEST(ReduceOpNames, AnUnknownNameIsAConfigErrorListingTheKnownOnes) {
  try {
    parse_reduce_op("mean");
    ADD_FAILURE() << "parse_reduce_op(\"mean\") returned";
  } catch (const ConfigError& e) {
    const std::string& what = e.detail();
    EXPECT_NE(what.find("'mean'"), std::string::npos) << what;
    EXPECT_NE(what.find("sum, prod, min, max, avg"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace course
