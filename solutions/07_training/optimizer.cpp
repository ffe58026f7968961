// optimizer.cpp: lesson 07, part 6: the update rules of SGD and Adam (see optimizer.h).
#include "optimizer.h"

#include <cmath>

#include "error.h"
#include "tensor_ops.h"

namespace course {

void Sgd::step() {
  for (const auto& [i, grad] : grads()) {
    // d = g + wd*p (a new tensor: never change the gradient), b = momentum*b + d in
    // state(i, "momentum_buffer"), d = nesterov ? d + momentum*b : b, then p -= lr*d.
    // BEGIN SOLUTION: the SGD update with tensor_ops.h's in-place ops
    const Tensor& p = params_[i].data();
    const float momentum = options_.momentum, wd = options_.weight_decay;
    Tensor d = grad;
    if (wd != 0.0f) {
      d = grad.clone();
      add_(d, p, wd);
    }
    if (momentum != 0.0f) {
      Tensor& b = state(i, "momentum_buffer");
      axpby_(b, 1.0f, d, momentum);
      d = options_.nesterov ? add(d, scale(b, momentum)) : b;
    }
    add_(p, d, -options_.lr);
    // END SOLUTION
  }
  ++steps_;
}

void Adam::step() {
  ++steps_;
  for (const auto& [i, grad] : grads()) {
    // Decay as in SGD; m = state(i, "exp_avg") and v = state(i, "exp_avg_sq") as in
    // optimizer.h; with c1 = 1 - beta1^t and c2 = 1 - beta2^t (t = steps_),
    // p += -lr/c1 * m / (sqrt(v)/sqrt(c2) + eps). Every constant in double (optimizer.h).
    // BEGIN SOLUTION: the Adam update with tensor_ops.h's in-place ops
    const Tensor& p = params_[i].data();
    const AdamOptions& o = options_;
    Tensor d = grad;
    if (o.weight_decay != 0) {
      d = grad.clone();
      add_(d, p, static_cast<float>(o.weight_decay));
    }
    Tensor& m = state(i, "exp_avg");
    Tensor& v = state(i, "exp_avg_sq");
    axpby_(m, static_cast<float>(1.0 - o.beta1), d, static_cast<float>(o.beta1));
    scale_(v, static_cast<float>(o.beta2));
    addcmul_(v, d, d, static_cast<float>(1.0 - o.beta2));
    const auto t = static_cast<double>(steps_);
    const double correction1 = 1.0 - std::pow(o.beta1, t);
    const double correction2 = 1.0 - std::pow(o.beta2, t);
    Tensor denom = sqrt(v);
    scale_(denom, static_cast<float>(1.0 / std::sqrt(correction2)));
    add_scalar_(denom, static_cast<float>(o.eps));
    addcdiv_(p, m, denom, static_cast<float>(-o.lr / correction1));
    // END SOLUTION
  }
}

}  // namespace course
