// linear.h: lesson 07, the fully connected layer y = x Wᵀ + b (torch.nn.Linear).
//
//   Rng rng(0);
//   Linear fc(784, 512, rng);               // weight [512, 784], bias [512]
//   Variable y = fc.forward(x);             // x [B, 784] -> y [B, 512]
//
// Initialisation (PyTorch's default, nn.Linear.reset_parameters): with fan_in = in_features
// and bound = 1/sqrt(fan_in),
//   weight ~ U(-bound, bound)   (kaiming_uniform_ with a = sqrt(5): gain sqrt(1/3) times
//                                sqrt(3/fan_in) is exactly 1/sqrt(fan_in))
//   bias   ~ U(-bound, bound)
// drawn from `rng` with Rng::uniform, weight first in row-major order, then bias. The
// order is part of the contract: the same seed gives the same model on every rank.
//
// Parameters are registered as "weight" then "bias" (so named_parameters() of a
// Sequential reads "0.weight", "0.bias", "2.weight", ...). Layout [out, in] as in PyTorch,
// so checkpoints can be compared with torch's state_dict.
#pragma once

#include <cstdint>

#include "module.h"
#include "rng.h"

namespace course {

class Linear : public Module {
 public:
  /// REQUIRES: in_features >= 1, out_features >= 1 (ConfigError otherwise).
  Linear(int64_t in_features, int64_t out_features, Rng& rng, bool bias = true);

  /// x [B, in_features] -> [B, out_features], recorded as one LinearBackward node.
  Variable forward(const Variable& x) override;
  std::string describe() const override;

  /// Draws new weights and biases as described above.
  void reset_parameters(Rng& rng);

  const Variable& weight() const { return weight_; }
  /// Undefined when built with bias = false.
  const Variable& bias() const { return bias_; }
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

 private:
  int64_t in_features_;
  int64_t out_features_;
  Variable weight_;
  Variable bias_;
};

}  // namespace course
