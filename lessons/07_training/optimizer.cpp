// optimizer.cpp: lesson 07, part 6: the update rules of SGD and Adam (see optimizer.h).
#include "optimizer.h"

#include <cmath>

#include "error.h"
#include "tensor_ops.h"

namespace course {

void Sgd::step() {
  for ([[maybe_unused]] const auto& [i, grad] : grads()) {
    // d = g + wd*p (a new tensor: never change the gradient), b = momentum*b + d in
    // state(i, "momentum_buffer"), d = nesterov ? d + momentum*b : b, then p -= lr*d.
    // TODO(lesson07): the SGD update with tensor_ops.h's in-place ops
    COURSE_TODO();
  }
  ++steps_;
}

void Adam::step() {
  ++steps_;
  for ([[maybe_unused]] const auto& [i, grad] : grads()) {
    // Decay as in SGD; m = state(i, "exp_avg") and v = state(i, "exp_avg_sq") as in
    // optimizer.h; with c1 = 1 - beta1^t and c2 = 1 - beta2^t (t = steps_),
    // p += -lr/c1 * m / (sqrt(v)/sqrt(c2) + eps). Every constant in double (optimizer.h).
    // TODO(lesson07): the Adam update with tensor_ops.h's in-place ops
    COURSE_TODO();
  }
}

}  // namespace course
