// ranks.cpp: lesson 01, part 1: rank arithmetic from a node layout (see ranks.h).
#include "ranks.h"

#include "error.h"

namespace course {

int world_size(const NodeLayout& layout) {
  check_layout(layout);
  // BEGIN SOLUTION: every node runs nproc_per_node ranks
  return layout.nnodes * layout.nproc_per_node;
  // END SOLUTION
}

int global_rank(const NodeLayout& layout, int node_rank, int local_rank) {
  check_node_position(layout, node_rank, local_rank);
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
