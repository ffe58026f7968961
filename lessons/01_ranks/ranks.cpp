// ranks.cpp: lesson 01, part 1: rank arithmetic from a node layout (see ranks.h).
#include "ranks.h"

#include "error.h"

namespace course {

int world_size(const NodeLayout& layout) {
  check_layout(layout);
  // TODO(lesson01): every node runs nproc_per_node ranks
  COURSE_TODO();
}

int global_rank(const NodeLayout& layout, int node_rank, int local_rank) {
  check_node_position(layout, node_rank, local_rank);
  // TODO(lesson01): ranks are numbered node by node
  COURSE_TODO();
}

int node_of(const NodeLayout& layout, int rank) {
  check_rank(layout, rank);
  // TODO(lesson01): which block of nproc_per_node ranks holds `rank`?
  COURSE_TODO();
}

int local_rank_of(const NodeLayout& layout, int rank) {
  check_rank(layout, rank);
  // TODO(lesson01): the position of `rank` inside its node's block
  COURSE_TODO();
}

}  // namespace course
