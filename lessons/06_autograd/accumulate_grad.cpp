// accumulate_grad.cpp: lesson 06, part 2: where gradients come to rest (see node.h).
//
// The engine delivers to a leaf's AccumulateGrad the sum of every gradient that flowed
// to the leaf in this backward pass. This file adds it into leaf.grad() and then tells
// whoever is listening (the post-accumulate-grad hooks).
//
// Accumulate, never assign: PyTorch adds each backward's gradient to what is already
// there, until someone calls zero_grad(). Gradient accumulation over micro-batches,
// and DDP's no_sync(), rely on it.
#include <mutex>

#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad) {
  if (!grad.defined()) return {};
  if (grad.shape() != leaf_->data.shape()) {
    throw ConfigError("AccumulateGrad: gradient of shape " + shape_str(grad.shape()) + " for \"" +
                      leaf_->name + "\" of shape " + shape_str(leaf_->data.shape()) +
                      ": a backward formula returned the wrong shape");
  }
  std::vector<PostAccumulateGradHook> hooks;
  {
    std::lock_guard<std::mutex> lock(leaf_->mutex);
    // The first gradient becomes leaf_->grad (a clone, unless grad.is_unique()); later
    // ones are added in place.
    // TODO(lesson06): keep or clone the first gradient, add later ones in place
    COURSE_TODO();
    for (const auto& entry : leaf_->hooks) hooks.push_back(entry.second);
  }
  // Outside the lock: a hook may read or replace the gradient (DDP's reducer does).
  const Variable leaf(leaf_);
  for (const auto& hook : hooks) hook(leaf);
  return {};
}

}  // namespace course
