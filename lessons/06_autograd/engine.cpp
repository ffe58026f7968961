// engine.cpp: lesson 06, part 1: the backward pass (see engine.h for the algorithm).
#include "engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "error.h"
#include "ready_queue.h"

namespace course {
namespace {

// How many edges point at each node reachable from `root` (iterative: deep graphs would
// overflow a recursive walk's stack).
std::unordered_map<Node*, int> count_dependencies(Node* root) {
  std::unordered_map<Node*, int> dependencies;
  // TODO(lesson06): depth-first walk over next_functions(); count every edge, visit every node once
  COURSE_TODO();
  return dependencies;
}

}  // namespace

void run_backward(const Variable& root, const Tensor& grad_output) {
  const Tensor seed = backward_seed(root, grad_output);  // first: it checks the root
  // The root's own node: its grad_fn, or its AccumulateGrad when the root is a leaf.
  // Holding it keeps the whole graph alive while we walk it through raw pointers.
  const std::shared_ptr<Node> root_node = gradient_edge(root);
  [[maybe_unused]] Sweep sweep = start_sweep(root_node.get(), seed, count_dependencies(root_node.get()));

  // Pop the next ready node, apply() it to its summed gradient, add each returned gradient
  // into the buffer of the next node (add_to_buffer) and count that node down: at 0 it is
  // ready (sweep.push). Nodes whose buffer stayed undefined are not applied, but still
  // count down.
  // TODO(lesson06): the sweep: pop, apply, deliver, count down
  COURSE_TODO();
}

}  // namespace course
