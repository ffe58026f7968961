// tp_flags_test.cpp: lesson 15, given code: ./lesson15's flags checked before any rank
// starts (tp_flags_problem, a usage error, exit 64): --hidden takes the blocks' one width,
// and fc1's 4H features must split over --tp ranks.
//
//   ./build/solutions/test_15 --gtest_filter='TpFlags.*'
#include <gtest/gtest.h>

#include <string>

#include "tp_training.h"
#include "tp_training_flags.h"

namespace course::test {
namespace {

TEST(TpFlags, OneHiddenWidthThatSplitsOverTheTensorParallelRanks) {
  TpTrainingOptions o;
  o.hidden = {128, 128};
  const std::string two = tp_flags_problem(4, o);
  EXPECT_NE(two.find("--hidden takes one size"), std::string::npos) << two;
  EXPECT_NE(two.find("2 values"), std::string::npos) << two;
  // --hidden 9: fc1's 36 features split over 6 ranks, not over 8.
  o.hidden = {9};
  o.tp = 0;
  EXPECT_EQ(tp_flags_problem(6, o), "");
  const std::string eight = tp_flags_problem(8, o);
  EXPECT_NE(eight.find("--hidden 9"), std::string::npos) << eight;
  EXPECT_NE(eight.find("--tp 8"), std::string::npos) << eight;
  o.hidden = {128};
  o.tp = 3;
  EXPECT_NE(tp_flags_problem(4, o).find("--tp 3"), std::string::npos);
  o.tp = 0;
  EXPECT_EQ(tp_flags_problem(4, o), "");
}

}  // namespace
}  // namespace course::test
