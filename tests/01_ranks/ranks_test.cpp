// ranks_test.cpp: lesson 01 rank arithmetic against a layout enumerated node by node.
#include "ranks.h"

#include <gtest/gtest.h>

#include "error.h"

namespace course {
namespace {

TEST(Ranks, RoundTripsEveryRankOfManyLayouts) {
  for (int nnodes = 1; nnodes <= 5; ++nnodes) {
    for (int per_node = 1; per_node <= 7; ++per_node) {
      const NodeLayout layout{nnodes, per_node};
      ASSERT_EQ(world_size(layout), nnodes * per_node);
      int expected_rank = 0;  // the serial oracle: count node by node
      for (int node = 0; node < nnodes; ++node) {
        for (int local = 0; local < per_node; ++local, ++expected_rank) {
          ASSERT_EQ(global_rank(layout, node, local), expected_rank)
              << nnodes << "x" << per_node << " node " << node << " local " << local;
          ASSERT_EQ(node_of(layout, expected_rank), node);
          ASSERT_EQ(local_rank_of(layout, expected_rank), local);
        }
      }
    }
  }
}

TEST(Ranks, TwoNodesOfFour) {
  const NodeLayout layout{2, 4};
  EXPECT_EQ(global_rank(layout, 1, 2), 6);
  EXPECT_EQ(node_of(layout, 5), 1);
  EXPECT_EQ(local_rank_of(layout, 5), 1);
  EXPECT_EQ(local_rank_of(layout, 3), 3);
}

TEST(Ranks, OutOfRangeIsAConfigError) {
  const NodeLayout layout{2, 3};
  EXPECT_THROW(global_rank(layout, 2, 0), ConfigError);
  EXPECT_THROW(global_rank(layout, 0, 3), ConfigError);
  EXPECT_THROW(global_rank(layout, -1, 0), ConfigError);
  EXPECT_THROW(node_of(layout, 6), ConfigError);
  EXPECT_THROW(local_rank_of(layout, -1), ConfigError);
  EXPECT_THROW(world_size(NodeLayout{0, 4}), ConfigError);
  EXPECT_THROW(world_size(NodeLayout{2, 0}), ConfigError);
}

}  // namespace
}  // namespace course
