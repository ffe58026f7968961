// saved_tensors.h: lesson 17, given: the saved-tensor ledger, what a graph keeps alive for
// its backward pass, by node, measured rather than claimed.
//
//   Variable loss = cross_entropy(gpt.forward(ids), targets);
//   SavedTensorLedger ledger = saved_tensor_ledger(loss);
//   ledger.total_bytes                      // every node's saved tensors, each range once
//   ledger.bytes_of("AttentionBackward")    // naive: P's 4 n S² and q, k, v; tiled: lse's 4 n S
//   ... out << ledger.describe();               // one row per node name, largest first
//
// THE WALK. Every node reachable from root.grad_fn() through next_functions(), each node
// once (a node reached by two paths, as a leaf's AccumulateGrad or a residual's input, is
// visited once), with an explicit stack: no recursion, so a graph of a million nodes
// cannot overflow the thread's stack. Per node, the tensors of Node::saved_tensors()
// (lesson 06's node.h).
//
// EACH RANGE ONCE. Two nodes often save the same tensor: a tensor read by two ops that each
// keep their input (x used twice, a weight shared by two layers), or a view of a saved
// tensor. A tensor is counted where it is first met, keyed by its first element's address
// (Tensor::raw()) and its element count: the same handle, a copy of it, or another view
// starting at the same element with the same size count once. Overlapping views of one storage that
// differ in start or size each count in full (the ledger does not merge ranges; no node of the
// course saves such views).
//
// Bytes are numel() x 4 (every Tensor holds floats), wherever the tensor lives, or x the
// `element_bytes` the caller names (lesson 18 counts a 16-bit run's activations at 2).
//
// LEAVING OUT. Tensors passed as `exclude` are counted as already met: pass the model's
// parameters (Module::parameters()' data) and the ledger holds activations alone, the
// count lesson 18's formula gives.
//
// What this is not: the process's memory. Activations that no node saves (freed after the
// forward) and the parameters' gradients are not here; parameters saved by a node (a
// linear's weight) are, though they would live anyway.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "variable.h"

namespace course {

/// The nodes of one name (e.g. "LinearBackward") and what they keep.
struct SavedTensorRow {
  std::string node;     ///< Node::name()
  int64_t count = 0;    ///< nodes of this name in the graph
  int64_t tensors = 0;  ///< saved tensors counted here (a range already counted is not)
  int64_t bytes = 0;    ///< their bytes
};

/// What saved_tensor_ledger found.
struct SavedTensorLedger {
  std::vector<SavedTensorRow> by_node;  ///< one row per node name, bytes descending, then name
  int64_t total_bytes = 0;              ///< the sum of by_node's bytes
  int64_t nodes = 0;                    ///< nodes visited

  /// The bytes of the nodes named `node` (0 when there are none).
  int64_t bytes_of(const std::string& node) const;
  /// A table: node, count, tensors, bytes (and MiB), one row per name, then the total.
  std::string describe() const;
};

/// The ledger of every node reachable from root's grad_fn (see the top of this file), the
/// tensors of `exclude` left out, each element counted at `element_bytes`. A root without
/// grad_fn (a leaf, or a result made under NoGradGuard) has an empty ledger.
SavedTensorLedger saved_tensor_ledger(const Variable& root, const std::vector<Tensor>& exclude = {},
                                      int64_t element_bytes = 4);

}  // namespace course
