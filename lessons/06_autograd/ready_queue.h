// ready_queue.h: lesson 06, given: the bookkeeping of run_backward (engine.cpp): the queue
// of nodes whose input gradient is complete, the input buffers that sum a node's incoming
// gradients, and the count of gradients each node still waits for (Sweep).
#pragma once

#include <cstdint>
#include <queue>
#include <unordered_map>
#include <vector>

#include "node.h"
#include "tensor.h"

namespace course {

/// A node whose input gradient is complete. `order` breaks ties between equal sequence
/// numbers: the node readied last runs first.
struct ReadyNode {
  uint64_t sequence_nr;
  uint64_t order;
  Node* node;
};

/// Orders the queue: the highest sequence number first, then the node readied last.
struct RunsLater {
  bool operator()(const ReadyNode& a, const ReadyNode& b) const {
    if (a.sequence_nr != b.sequence_nr) return a.sequence_nr < b.sequence_nr;
    return a.order < b.order;
  }
};

/// The nodes ready to run, the next one on top.
using ReadyQueue = std::priority_queue<ReadyNode, std::vector<ReadyNode>, RunsLater>;

/// Adds `grad` into a node's input buffer: the first gradient is kept as it is, later ones
/// are summed into a new tensor (the first may be shared with another node's buffer, so it
/// is never changed in place).
void add_to_buffer(Tensor& buffer, Tensor grad);

/// One backward pass's bookkeeping, keyed by the nodes' raw pointers (the root's
/// shared_ptr, held by run_backward, keeps every node alive).
struct Sweep {
  std::unordered_map<Node*, int> dependencies;  // edges into each node not yet delivered
  std::unordered_map<Node*, Tensor> buffers;    // each node's input gradient, summed so far
  ReadyQueue ready;                             // nodes whose input gradient is complete
  uint64_t order = 0;                           // how many nodes have been readied

  /// Queues `node` as ready to run.
  void push(Node* node) { ready.push({node->sequence_nr(), order++, node}); }
};

/// The start of a sweep: the dependency counts, the root's buffer holding `seed`, and the
/// root ready.
Sweep start_sweep(Node* root, Tensor seed, std::unordered_map<Node*, int> dependencies);

}  // namespace course
