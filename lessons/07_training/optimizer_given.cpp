// optimizer_given.cpp: lesson 07, given: the Optimizer base (parameters, state, checkpoints)
// and the option checks of Sgd and Adam. The update rules are the exercise (optimizer.cpp).
#include <algorithm>
#include <charconv>

#include "error.h"
#include "optimizer.h"
#include "tensor_ops.h"

namespace course {

Optimizer::Optimizer(std::vector<Variable> params)
    : params_(std::move(params)), state_(params_.size()) {
  for (const Variable& p : params_) {
    if (!p.defined() || !p.is_leaf() || !p.requires_grad()) {
      throw ConfigError("optimizer: parameter \"" + (p.defined() ? p.name() : "?") +
                        "\" is not a leaf that requires grad");
    }
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const Variable& p : params_) p.zero_grad(set_to_none);
}

Tensor& Optimizer::state(size_t i, const std::string& key) {
  Tensor& t = state_[i][key];
  if (!t.defined()) t = Tensor::zeros(params_[i].shape(), params_[i].device());
  return t;
}

std::vector<std::pair<size_t, Tensor>> Optimizer::grads() const {
  std::vector<std::pair<size_t, Tensor>> out;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor grad = params_[i].grad();
    if (grad.defined()) out.emplace_back(i, std::move(grad));
  }
  return out;
}

NamedTensors Optimizer::state_tensors() const {
  NamedTensors out;
  for (size_t i = 0; i < state_.size(); ++i) {
    for (const auto& [key, t] : state_[i]) out.emplace_back(std::to_string(i) + "." + key, t);
  }
  return out;
}

void Optimizer::load_state(const NamedTensors& state, int64_t steps) {
  std::vector<std::map<std::string, Tensor>> loaded(params_.size());
  for (const auto& [name, t] : state) {
    const auto dot = name.find('.');
    // "<i>.<key>": i must be all digits (from_chars leaves i alone when it is not)
    size_t i = params_.size();
    const char* end = name.data() + std::min(dot, name.size());
    const bool parsed = std::from_chars(name.data(), end, i).ptr == end;
    if (dot == std::string::npos || !parsed || i >= params_.size() ||
        t.shape() != params_[i].shape()) {
      throw ConfigError("optimizer state \"" + name + "\" " + shape_str(t.shape()) +
                        " fits none of this optimizer's " + std::to_string(params_.size()) +
                        " parameters");
    }
    loaded[i][name.substr(dot + 1)] = t.to(params_[i].device());  // a copy, where p lives
  }
  state_ = std::move(loaded);
  steps_ = steps;
}

Sgd::Sgd(std::vector<Variable> params, const SgdOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  if (!(options.lr > 0) || options.momentum < 0 || options.weight_decay < 0 ||
      (options.nesterov && options.momentum <= 0)) {
    throw ConfigError(
        "Sgd: need lr > 0, momentum >= 0, weight_decay >= 0 (and momentum > 0 "
        "for nesterov)");
  }
}

Adam::Adam(std::vector<Variable> params, const AdamOptions& options)
    : Optimizer(std::move(params)), options_(options) {
  if (!(options.lr > 0) || options.beta1 < 0 || options.beta1 >= 1 || options.beta2 < 0 ||
      options.beta2 >= 1 || !(options.eps > 0) || options.weight_decay < 0) {
    throw ConfigError("Adam: need lr > 0, 0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0");
  }
}

}  // namespace course
