// layout_hidden_test.cpp: an example of an instructor's hidden test for lesson 01.
//
// Hidden tests live outside the learner's repository: COURSE_HIDDEN_TESTS=DIR (or
// tools/grade.py --hidden DIR) with DIR/NN_topic/*.cpp builds test_NN_hidden, graded with
// DIR/NN_topic/points.json (docs/instructors.md). The grader's own tests use this folder.
#include <gtest/gtest.h>

#include "ranks.h"

namespace course {
namespace {

TEST(HiddenRanks, DefaultLayoutIsOneProcessOnOneNode) {
  const NodeLayout layout;
  EXPECT_EQ(layout.nnodes, 1);
  EXPECT_EQ(layout.nproc_per_node, 1);
}

}  // namespace
}  // namespace course
