// ranks.cpp: lesson 01's rank arithmetic, sabotaged (sabotage.h).
#include "ranks.h"

#include "sabotage.h"

namespace course {

int world_size(const NodeLayout& layout) {
  sabotage::strike(false);
  return layout.nnodes * layout.nproc_per_node;
}

int global_rank(const NodeLayout& layout, int node_rank, int local_rank) {
  sabotage::strike(false);
  return node_rank * layout.nproc_per_node + local_rank;
}

int node_of(const NodeLayout& layout, int rank) {
  sabotage::strike(false);
  return rank / layout.nproc_per_node;
}

int local_rank_of(const NodeLayout& layout, int rank) {
  sabotage::strike(false);
  return rank % layout.nproc_per_node;
}

}  // namespace course
