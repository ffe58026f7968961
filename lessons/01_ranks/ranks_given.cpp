// ranks_given.cpp: lesson 01, given: the argument checks of the rank arithmetic. The
// arithmetic itself is the exercise (ranks.cpp).
#include <string>

#include "error.h"
#include "ranks.h"

namespace course {

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

void check_node_position(const NodeLayout& layout, int node_rank, int local_rank) {
  check_layout(layout);
  if (node_rank < 0 || node_rank >= layout.nnodes || local_rank < 0 ||
      local_rank >= layout.nproc_per_node) {
    throw ConfigError("node " + std::to_string(node_rank) + ", local rank " +
                      std::to_string(local_rank) + " is outside a layout of " +
                      std::to_string(layout.nnodes) + " nodes x " +
                      std::to_string(layout.nproc_per_node) + " processes");
  }
}

}  // namespace course
