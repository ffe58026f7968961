// optimizer.h: lesson 07, SGD with momentum and weight decay, and Adam (torch.optim).
//
//   Sgd opt(model.parameters(), {.lr = 0.05f, .momentum = 0.9f});
//   opt.zero_grad();  loss.backward();  opt.step();
//
// An optimizer holds the parameters it was given (in that order), per-parameter state
// (momentum buffers, Adam's moments), and updates each parameter's data in place from
// its grad(). A parameter whose grad() is undefined (it took no part in the loss) is
// skipped, state and all, as in PyTorch.
//
// The update rules, per element, exactly as torch.optim documents them (g = p.grad):
//
//   SGD (dampening 0):          g ← g + weight_decay · p
//                               b ← momentum · b + g            (b starts at 0, so the
//                                                                first b is g)
//                               g ← nesterov ? g + momentum · b : b    (if momentum ≠ 0)
//                               p ← p − lr · g
//
//   Adam (t = 1, 2, ... counts this optimizer's steps; L2 weight decay, not AdamW):
//                               g ← g + weight_decay · p
//                               m ← β1 · m + (1 − β1) · g
//                               v ← β2 · v + (1 − β2) · g²
//                               p ← p − lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + ε)
//
// How: with the in-place tensor ops of tensor_ops.h (add_, axpby_, addcmul_, addcdiv_,
// ...), line for line what torch/optim/sgd.py and adam.py do in their single-tensor
// path. Each op is one vectorised pass over the parameter, on the CPU or the GPU alike.
// A parameter's grad() is never changed: weight decay makes a new tensor.
//
// Adam's hyperparameters are doubles, as torch's are (Python floats), and so are the
// constants made from them: 1 − β1, 1 − β2, lr / (1 − β1^t) and sqrt(1 − β2^t) are
// computed in double and rounded to float once, where an op takes them. In float,
// 1 − 0.999f is 0.99998713 of 0.001: every v would sit 1.3e-5 below torch's.
//
// State for checkpoints: state_tensors() names every state tensor "<i>.<key>" (i is the
// parameter's index, key "momentum_buffer", "exp_avg" or "exp_avg_sq") and step_count()
// counts steps taken; load_state() restores both.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "safetensors.h"
#include "variable.h"

namespace course {

class Optimizer {
 public:
  explicit Optimizer(std::vector<Variable> params);
  virtual ~Optimizer() = default;

  /// Updates every parameter with a defined grad() from its gradient and state.
  virtual void step() = 0;
  /// Clears every parameter's gradient (see Variable::zero_grad).
  void zero_grad(bool set_to_none = true);

  const std::vector<Variable>& params() const { return params_; }
  int64_t step_count() const { return steps_; }

  NamedTensors state_tensors() const;
  /// Restores what state_tensors() and step_count() described. Names it does not know are
  /// a ConfigError (a checkpoint of another optimizer or model).
  void load_state(const NamedTensors& state, int64_t steps);

 protected:
  /// The state tensor `key` of parameter i, created as zeros shaped like the parameter
  /// on first use.
  Tensor& state(size_t i, const std::string& key);
  /// The parameters that have a gradient this step, as (index into params_, gradient)
  /// pairs in order: the others are skipped by step(), as torch skips p.grad is None.
  std::vector<std::pair<size_t, Tensor>> grads() const;

  std::vector<Variable> params_;
  std::vector<std::map<std::string, Tensor>> state_;
  int64_t steps_ = 0;
};

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

class Sgd : public Optimizer {
 public:
  /// REQUIRES: lr > 0, momentum >= 0, weight_decay >= 0, and momentum > 0 if nesterov.
  Sgd(std::vector<Variable> params, const SgdOptions& options);
  void step() override;
  const SgdOptions& options() const { return options_; }

 private:
  SgdOptions options_;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class Adam : public Optimizer {
 public:
  /// REQUIRES: lr > 0, 0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0.
  Adam(std::vector<Variable> params, const AdamOptions& options);
  void step() override;
  const AdamOptions& options() const { return options_; }

 private:
  AdamOptions options_;
};

}  // namespace course
