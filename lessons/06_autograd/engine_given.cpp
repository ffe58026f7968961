// engine_given.cpp: lesson 06, given: the checks of backward()'s arguments, its seed
// gradient, and the input buffers (ready_queue.h). The backward pass itself is the exercise
// (engine.cpp).
#include "engine.h"
#include "error.h"
#include "ready_queue.h"
#include "tensor_ops.h"

namespace course {

Tensor backward_seed(const Variable& root, const Tensor& grad_output) {
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
  return seed;
}

void add_to_buffer(Tensor& buffer, Tensor grad) {
  if (!grad.defined()) return;
  buffer = buffer.defined() ? add(buffer, grad) : std::move(grad);
}

Sweep start_sweep(Node* root, Tensor seed, std::unordered_map<Node*, int> dependencies) {
  Sweep sweep;
  sweep.dependencies = std::move(dependencies);
  add_to_buffer(sweep.buffers[root], std::move(seed));
  sweep.push(root);
  return sweep;
}

}  // namespace course
