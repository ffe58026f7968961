// adamw.cpp: AdamW's update with tensor_ops.h's in-place ops (see adamw.h).
#include "adamw.h"

#include <cmath>
#include <string>
#include <utility>

#include "error.h"
#include "tensor_ops.h"

namespace course {

AdamW::AdamW(std::vector<Variable> params, const AdamWOptions& options, std::vector<bool> decay)
    : Optimizer(std::move(params)), options_(options), decay_(std::move(decay)) {
  if (!(options.lr > 0) || options.beta1 < 0 || options.beta1 >= 1 || options.beta2 < 0 ||
      options.beta2 >= 1 || !(options.eps > 0) || !(options.weight_decay >= 0)) {
    throw ConfigError("AdamW: need lr > 0, 0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0");
  }
  if (!decay_.empty() && decay_.size() != params_.size()) {
    throw ConfigError("AdamW: " + std::to_string(decay_.size()) + " decay flags for " +
                      std::to_string(params_.size()) + " parameters");
  }
}

void AdamW::set_lr(double lr) {
  if (!(lr > 0))
    throw ConfigError("AdamW: the learning rate must be > 0 (got " + std::to_string(lr) + ")");
  options_.lr = lr;
}

void AdamW::step() {
  ++steps_;
  const AdamWOptions& o = options_;
  const auto t = static_cast<double>(steps_);
  const double correction1 = 1.0 - std::pow(o.beta1, t);
  const double correction2 = 1.0 - std::pow(o.beta2, t);
  for (const auto& [i, grad] : grads()) {
    const Tensor& p = params_[i].data();
    if (o.weight_decay != 0 && decays(i))
      scale_(p, static_cast<float>(1.0 - o.lr * o.weight_decay));
    Tensor& m = state(i, "exp_avg");
    Tensor& v = state(i, "exp_avg_sq");
    axpby_(m, static_cast<float>(1.0 - o.beta1), grad, static_cast<float>(o.beta1));
    scale_(v, static_cast<float>(o.beta2));
    addcmul_(v, grad, grad, static_cast<float>(1.0 - o.beta2));
    Tensor denom = sqrt(v);
    scale_(denom, static_cast<float>(1.0 / std::sqrt(correction2)));
    add_scalar_(denom, static_cast<float>(o.eps));
    addcdiv_(p, m, denom, static_cast<float>(-o.lr / correction1));
  }
}

std::vector<bool> decay_matrices(const std::vector<Variable>& params) {
  std::vector<bool> out;
  out.reserve(params.size());
  for (const Variable& p : params) out.push_back(p.dim() >= 2);
  return out;
}

}  // namespace course
