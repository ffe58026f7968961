// batch_norm.h: lesson 11, batch normalisation over the rows of a [B, C] batch
// (torch.nn.BatchNorm1d), the one-process twin of SyncBatchNorm (given).
//
//   auto bn = std::make_shared<BatchNorm1d>(512);     // weight 1, bias 0, running 0 / 1
//   Variable y = bn->forward(x);                      // x [B, 512], normalised per column
//   bn->set_training(false);                          // evaluation: the running statistics
//
// TRAINING (per channel c, over the n = B rows of the batch):
//   mean_c   = (1/n) sum_i x_ic
//   var_c    = (1/n) sum_i (x_ic - mean_c)^2                  (biased: used to normalise)
//   invstd_c = 1 / sqrt(var_c + eps)
//   y_ic     = (x_ic - mean_c) * invstd_c * weight_c + bias_c
//   running_mean_c = (1 - momentum) running_mean_c + momentum mean_c
//   running_var_c  = (1 - momentum) running_var_c  + momentum var_c * n / (n - 1)  (unbiased)
// EVALUATION: y_ic = (x_ic - running_mean_c) / sqrt(running_var_c + eps) * weight_c + bias_c
//
// BACKWARD (dy = dL/dy; the two per-channel sums below are all that couples the rows):
//   sum_dy_c     = sum_i dy_ic
//   sum_dy_xmu_c = sum_i dy_ic (x_ic - mean_c)
//   dweight_c    = sum_dy_xmu_c * invstd_c          dbias_c = sum_dy_c
//   dx_ic = weight_c invstd_c (dy_ic - sum_dy_c / n - (x_ic - mean_c) invstd_c^2 sum_dy_xmu_c / n)
//
// SyncBatchNorm (sync_batch_norm.h) computes the same statistics and sums over the rows of
// every rank: the functions below are written once and shared.
//
// State: parameters "weight", "bias"; buffers "running_mean", "running_var" and
// "num_batches_tracked" (a float here; torch keeps an int64), as torch names them.
//
// What this is not: BatchNorm2d (no spatial dimensions), or a CUDA kernel: these functions
// work on CPU tensors. Thread safety: as Module.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "module.h"
#include "node.h"

namespace course {

/// Per-channel statistics of one batch (or, merged, of every rank's batch).
struct BatchNormStats {
  std::vector<float> mean;    ///< C entries
  std::vector<float> invstd;  ///< C entries: 1 / sqrt(biased variance + eps)
  int64_t count = 0;          ///< rows the statistics describe
};

/// The two per-channel sums of the backward pass.
struct BatchNormGradSums {
  std::vector<float> sum_dy;      ///< C entries
  std::vector<float> sum_dy_xmu;  ///< C entries
};

/// Mean and invstd of the columns of x [n, C]. With n = 0: mean 0, invstd 0, count 0.
BatchNormStats batch_norm_stats(const Tensor& x, float eps);

/// (x - mean) * invstd * weight + bias, per column. weight and bias are [C].
Tensor batch_norm_elemt(const Tensor& x, const BatchNormStats& stats, const Tensor& weight,
                        const Tensor& bias);

/// The running update above, with the unbiased variance var * n / (n - 1) recovered from
/// stats.invstd and eps. Does nothing when stats.count < 2 (torch refuses n = 1 in training;
/// here the running statistics simply stay).
void batch_norm_update_running(const BatchNormStats& stats, float eps, float momentum,
                               Tensor& running_mean, Tensor& running_var,
                               Tensor& num_batches_tracked);

/// sum_dy and sum_dy_xmu of dy [n, C] against x [n, C] and the batch mean.
BatchNormGradSums batch_norm_backward_reduce(const Tensor& dy, const Tensor& x,
                                             const BatchNormStats& stats);

/// dx from dy, x and sums over `stats.count` rows (all ranks' for SyncBatchNorm).
Tensor batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const BatchNormStats& stats,
                                 const Tensor& weight, const BatchNormGradSums& sums);

/// The backward node of BatchNorm1d (inputs x, weight, bias).
class BatchNormBackward : public Node {
 public:
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override { return "BatchNormBackward"; }
  Tensor x, weight;
  BatchNormStats stats;
  bool batch_statistics = true;  ///< false in evaluation: the statistics are constants
};

class BatchNorm1d : public Module {
 public:
  /// REQUIRES: num_features >= 1, eps > 0, 0 <= momentum <= 1 (ConfigError otherwise).
  explicit BatchNorm1d(int64_t num_features, float eps = 1e-5f, float momentum = 0.1f);
  /// x [B, num_features]. Training: batch statistics (B >= 2, ConfigError otherwise, as
  /// torch's "Expected more than 1 value per channel when training"); evaluation: running.
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  void set_training(bool training) { training_ = training; }
  bool training() const { return training_; }
  int64_t num_features() const { return num_features_; }
  float eps() const { return eps_; }
  float momentum() const { return momentum_; }
  const Variable& weight() const { return weight_; }
  const Variable& bias() const { return bias_; }

 protected:
  /// forward() in evaluation mode; shared with SyncBatchNorm.
  Variable forward_eval(const Variable& x);
  /// Throws ConfigError unless x is [B, num_features].
  void check_input(const Variable& x) const;
  Tensor running_mean_, running_var_, num_batches_tracked_;

 private:
  int64_t num_features_;
  float eps_;
  float momentum_;
  bool training_ = true;
  Variable weight_, bias_;
};

}  // namespace course
