// adamw.h: AdamW, Adam with decoupled weight decay (torch.optim.AdamW), given code that the
// transformer lessons (17 to 19) share. Not an exercise: lesson 07's Adam is.
//
//   AdamW opt(model.parameters(), {.lr = 1e-3, .beta2 = 0.95, .weight_decay = 0.1},
//             decay_matrices(model.parameters()));       // decay 2-D weights only
//   opt.zero_grad();  loss.backward();  opt.set_lr(schedule(step));  opt.step();
//
// The update, per element, exactly as torch/optim/adamw.py's single-tensor path
// (t = 1, 2, ... counts this optimizer's steps, g = p.grad):
//
//   p ← p · (1 − lr · weight_decay)           (decoupled: the gradient is not changed)
//   m ← β1 · m + (1 − β1) · g
//   v ← β2 · v + (1 − β2) · g²
//   p ← p − lr · (m / (1 − β1^t)) / (sqrt(v / (1 − β2^t)) + ε)
//
// Adam with weight_decay adds wd·p to the gradient, so the decay is divided by sqrt(v)
// like the gradient is and large-gradient weights barely decay; AdamW shrinks every weight
// by the same factor (Loshchilov and Hutter, "Decoupled Weight Decay Regularization").
//
// Which parameters decay: torch does it with two parameter groups; here `decay` says it per
// parameter (nanoGPT decays the 2-D weights of linears and embeddings, not biases or
// LayerNorm gains: decay_matrices()). Empty `decay`: every parameter decays.
//
// Hyperparameters and the constants made from them are doubles, rounded to float once
// where an op takes them (optimizer.h says why). State tensors are named as Adam's
// ("<i>.exp_avg", "<i>.exp_avg_sq"), so checkpoint.h saves and restores them.
#pragma once

#include <vector>

#include "optimizer.h"
#include "variable.h"

namespace course {

/// torch.optim.AdamW's hyperparameters (and its defaults).
struct AdamWOptions {
  double lr = 1e-3;            ///< the learning rate (set_lr changes it between steps)
  double beta1 = 0.9;          ///< the first moment's decay
  double beta2 = 0.999;        ///< the second moment's decay
  double eps = 1e-8;           ///< added to sqrt(v̂)
  double weight_decay = 1e-2;  ///< decoupled decay, multiplied by lr
};

/// Adam with decoupled weight decay (see the top of this file).
class AdamW : public Optimizer {
 public:
  /// REQUIRES: lr > 0, 0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0, and `decay`
  /// empty or one entry per parameter (ConfigError otherwise).
  AdamW(std::vector<Variable> params, const AdamWOptions& options, std::vector<bool> decay = {});
  /// One AdamW step on every parameter with a defined grad().
  void step() override;
  /// The options in use (lr as last set).
  const AdamWOptions& options() const { return options_; }
  /// Changes the learning rate for the next steps (a schedule sets it every step, as
  /// torch's code sets param_group["lr"]). REQUIRES: lr > 0.
  void set_lr(double lr);
  /// Whether parameter i decays.
  bool decays(size_t i) const { return decay_.empty() || decay_[i]; }

 private:
  AdamWOptions options_;
  std::vector<bool> decay_;
};

/// One entry per parameter: true for parameters of two or more dimensions (the weights of
/// linears and embeddings), false for biases and LayerNorm's gain and bias (nanoGPT's
/// configure_optimizers).
std::vector<bool> decay_matrices(const std::vector<Variable>& params);

}  // namespace course
