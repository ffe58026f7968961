// engine.cpp: lesson 06, part 1: the backward pass (see engine.h for the algorithm).
#include "engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {
namespace {

// A node whose input gradient is complete. `order` breaks ties between equal sequence
// numbers: the node readied last runs first.
struct ReadyNode {
  uint64_t sequence_nr;
  uint64_t order;
  Node* node;
};

struct RunsLater {
  bool operator()(const ReadyNode& a, const ReadyNode& b) const {
    if (a.sequence_nr != b.sequence_nr) return a.sequence_nr < b.sequence_nr;
    return a.order < b.order;
  }
};

using ReadyQueue = std::priority_queue<ReadyNode, std::vector<ReadyNode>, RunsLater>;

// How many edges point at each node reachable from `root` (iterative: deep graphs would
// overflow a recursive walk's stack).
std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> dependencies;
  // TODO(lesson06): depth-first walk over next_functions(); count every edge, visit every node once
  COURSE_TODO();
  return dependencies;
}

// Adds `grad` into a node's input buffer: the first gradient is kept as it is, later ones
// are summed into a new tensor (the first may be shared with another node's buffer, so it
// is never changed in place).
void add_to_buffer(Tensor& buffer, Tensor grad) {
  if (!grad.defined()) return;
  buffer = buffer.defined() ? add(buffer, grad) : std::move(grad);
}

}  // namespace

void run_backward(const Variable& root, const Tensor& grad_output) {
  if (!root.requires_grad()) {
    throw ConfigError("backward(): \"" + root.name() +
                      "\" does not require grad, so no graph was recorded. Was it computed under a "
                      "NoGradGuard, or only from leaves without requires_grad?");
  }
  Tensor seed = grad_output;
  if (!seed.defined()) {
    if (root.numel() != 1) {
      throw ConfigError("backward(): the root has shape " + shape_str(root.shape()) +
                        "; a gradient can be created implicitly only for one element. Pass "
                        "grad_output, or reduce the root to a scalar (sum, mean) first");
    }
    seed = Tensor::full(root.shape(), 1.0f, root.device());
  } else if (seed.shape() != root.shape()) {
    throw ConfigError("backward(): grad_output of shape " + shape_str(seed.shape()) +
                      " for a root of shape " + shape_str(root.shape()));
  }
  // The root's own node: its grad_fn, or its AccumulateGrad when the root is a leaf.
  // Holding it keeps the whole graph alive while we walk it through raw pointers.
  const std::shared_ptr<Node> root_node = gradient_edge(root);

  std::unordered_map<Node*, int> dependencies = count_dependencies(root_node.get());
  std::unordered_map<Node*, Tensor> buffers;
  ReadyQueue ready;
  uint64_t order = 0;
  add_to_buffer(buffers[root_node.get()], seed);
  ready.push({root_node->sequence_nr(), order++, root_node.get()});

  // Pop the next ready node, apply() it to its summed gradient, add each returned gradient
  // into the buffer of the next node (add_to_buffer) and count that node down: at 0 it is
  // ready. Nodes whose buffer stayed undefined are not applied, but still count down.
  // TODO(lesson06): the sweep: pop, apply, deliver, count down
  COURSE_TODO();
}

}  // namespace course
