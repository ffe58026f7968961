// ranks.cpp: lesson 01, part 1: rank arithmetic from a node layout (see ranks.h).
#include "ranks.h"

#include <string>

#include "error.h"

namespace course {

namespace {
void check_layout(const NodeLayout& layout) {
  if (layout.nnodes < 1 || layout.nproc_per_node < 1) {
    throw ConfigError("bad node layout: " + std::to_string(layout.nnodes) + " nodes x " +
                      std::to_string(layout.nproc_per_node) +
                      " processes; both must be at least 1");
  }
}

void check_rank(const NodeLayout& layout, int rank) {
  check_layout(layout);
  if (rank < 0 || rank >= world_size(layout)) {
    throw ConfigError("rank " + std::to_string(rank) + " is outside a world of " +
                      std::to_string(world_size(layout)) + " ranks");
  }
}
}  // namespace

int world_size(const NodeLayout& layout) {
  check_layout(layout);
  // BEGIN SOLUTION: every node runs nproc_per_node ranks
  return layout.nnodes * layout.nproc_per_node;
  // END SOLUTION
}

int global_rank(const NodeLayout& layout, int node_rank, int local_rank) {
  check_layout(layout);
  if (node_rank < 0 || node_rank >= layout.nnodes || local_rank < 0 ||
      local_rank >= layout.nproc_per_node) {
    throw ConfigError("node " + std::to_string(node_rank) + ", local rank " +
                      std::to_string(local_rank) + " is outside a layout of " +
                      std::to_string(layout.nnodes) + " nodes x " +
                      std::to_string(layout.nproc_per_node) + " processes");
  }
  // BEGIN SOLUTION: ranks are numbered node by node
  return node_rank * layout.nproc_per_node + local_rank;
  // END SOLUTION
}

int node_of(const NodeLayout& layout, int rank) {
  check_rank(layout, rank);
  // BEGIN SOLUTION: which block of nproc_per_node ranks holds `rank`?
  return rank / layout.nproc_per_node;
  // END SOLUTION
}

int local_rank_of(const NodeLayout& layout, int rank) {
  check_rank(layout, rank);
  // BEGIN SOLUTION: the position of `rank` inside its node's block
  return rank % layout.nproc_per_node;
  // END SOLUTION
}

}  // namespace course
