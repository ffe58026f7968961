// ranks.h: lesson 01, part 1: where a rank sits in the world.
//
// A job runs on `nnodes` machines with `nproc_per_node` processes each (one per GPU, or
// per core group). Ranks are numbered node by node:
//
//     node 0: ranks 0 .. P-1        local ranks 0 .. P-1
//     node 1: ranks P .. 2P-1       local ranks 0 .. P-1
//     ...
//
// The global rank names a process in collectives; the local rank picks its device and
// its slice of the machine. These functions convert between the two.
#pragma once

namespace course {

struct NodeLayout {
  int nnodes = 1;
  int nproc_per_node = 1;
};

/// Throws ConfigError unless nnodes >= 1 and nproc_per_node >= 1.
void check_layout(const NodeLayout& layout);
/// Throws ConfigError unless the layout is valid and 0 <= rank < world_size(layout).
void check_rank(const NodeLayout& layout, int rank);
/// Throws ConfigError unless the layout is valid, 0 <= node_rank < nnodes and
/// 0 <= local_rank < nproc_per_node.
void check_node_position(const NodeLayout& layout, int node_rank, int local_rank);

/// The number of ranks in the job.
/// REQUIRES: nnodes >= 1 and nproc_per_node >= 1, else throws ConfigError.
int world_size(const NodeLayout& layout);

/// The global rank of local rank `local_rank` on node `node_rank`.
/// Throws ConfigError when node_rank or local_rank is out of range.
int global_rank(const NodeLayout& layout, int node_rank, int local_rank);

/// The node that global rank `rank` runs on. Throws ConfigError when out of range.
int node_of(const NodeLayout& layout, int rank);

/// The local rank of global rank `rank` on its node. Throws ConfigError when out of range.
int local_rank_of(const NodeLayout& layout, int rank);

}  // namespace course
