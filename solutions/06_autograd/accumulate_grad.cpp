// accumulate_grad.cpp: lesson 06, part 2: where gradients come to rest (see node.h).
//
// The engine delivers to a leaf's AccumulateGrad the sum of every gradient that flowed
// to the leaf in this backward pass. This file adds it into leaf.grad(); apply()
// (node.cpp) then tells whoever is listening (the post-accumulate-grad hooks).
//
// Accumulate, never assign: PyTorch adds each backward's gradient to what is already
// there, until someone calls zero_grad(). Gradient accumulation over micro-batches,
// and DDP's no_sync(), rely on it.
#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {

// Called by apply() (node.cpp) with the leaf's mutex held, after the shape check; apply()
// then fires the hooks. The first gradient becomes leaf_->grad (a clone, unless
// grad.is_unique()); later ones are added in place.
void AccumulateGrad::accumulate(const Tensor& grad) {
  // BEGIN SOLUTION: keep or clone the first gradient, add later ones in place
  if (!leaf_->grad.defined()) {
    // Nobody else holds `grad` (the engine hands over its only handle): keep it as it
    // is, saving a copy. Otherwise (e.g. AddBackward passes one tensor to both inputs)
    // a later in-place addition would change the other holder's numbers: copy it.
    leaf_->grad = grad.is_unique() ? grad : grad.clone();
  } else {
    add_(leaf_->grad, grad);
  }
  // END SOLUTION
}

}  // namespace course
