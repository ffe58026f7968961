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
  // BEGIN SOLUTION: depth-first walk over next_functions(); count every edge, visit every node once
  std::unordered_set<Node*> seen{root};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const std::shared_ptr<Node>& next : node->next_functions()) {
      if (!next) continue;
      dependencies[next.get()] += 1;
      if (seen.insert(next.get()).second) stack.push_back(next.get());
    }
  }
  // END SOLUTION
  return dependencies;
}

}  // namespace

void run_backward(const Variable& root, const Tensor& grad_output) {
  const Tensor seed = backward_seed(root, grad_output);  // first: it checks the root
  // The root's own node: its grad_fn, or its AccumulateGrad when the root is a leaf.
  // Holding it keeps the whole graph alive while we walk it through raw pointers.
  const std::shared_ptr<Node> root_node = gradient_edge(root);
  Sweep sweep = start_sweep(root_node.get(), seed, count_dependencies(root_node.get()));

  // Pop the next ready node, apply() it to its summed gradient, add each returned gradient
  // into the buffer of the next node (add_to_buffer) and count that node down: at 0 it is
  // ready (sweep.push). Nodes whose buffer stayed undefined are not applied, but still
  // count down.
  // BEGIN SOLUTION: the sweep: pop, apply, deliver, count down
  while (!sweep.ready.empty()) {
    Node* node = sweep.ready.top().node;
    sweep.ready.pop();
    std::vector<Tensor> grads;
    {
      // Move the summed gradient out: once apply() returns, nobody else holds it.
      Tensor grad = std::move(sweep.buffers[node]);
      sweep.buffers.erase(node);
      if (grad.defined()) grads = node->apply(grad);
    }
    const std::vector<std::shared_ptr<Node>>& next = node->next_functions();
    if (grads.size() > next.size()) {
      throw ConfigError(node->name() + " returned " + std::to_string(grads.size()) +
                        " gradients for " + std::to_string(next.size()) + " inputs");
    }
    for (size_t i = 0; i < next.size(); ++i) {
      Node* target = next[i].get();
      if (target == nullptr) continue;
      if (i < grads.size()) add_to_buffer(sweep.buffers[target], std::move(grads[i]));
      if (--sweep.dependencies[target] == 0) sweep.push(target);
    }
  }
  // END SOLUTION
}

}  // namespace course
