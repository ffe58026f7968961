// sync_batch_norm.h: lesson 11, the exercise: batch normalisation whose statistics span
// every rank's batch (torch.nn.SyncBatchNorm).
//
//   auto bn = std::make_shared<SyncBatchNorm>(512, *bn_group);
//   model = convert_sync_batchnorm(*model, *bn_group);   // every BatchNorm1d swapped
//
// Under DDP each rank normalises its own B/N rows. With small per-rank batches those
// statistics are noisy and differ from rank to rank; SyncBatchNorm normalises with the
// statistics of all B rows instead, so N ranks compute exactly what one process with
// BatchNorm1d computes on the whole batch (up to float rounding).
//
// FORWARD (training), on every rank r with n_r rows (n_r may differ, and may be 0):
//   1. local:      mean_r, invstd_r over its own rows (batch_norm_stats)
//   2. all-gather: [mean_r (C) | invstd_r (C) | n_r (1)] from every rank, in rank order
//
//        rank 0  [m0 | s0 | n0] ──┐
//        rank 1  [m1 | s1 | n1] ──┼─ all_gather ──> every rank: [m0|s0|n0][m1|s1|n1][m2|s2|n2]
//        rank 2  [m2 | s2 | n2] ──┘
//
//   3. merge (sync_batch_norm_gather_stats), per channel, skipping ranks with n_r = 0:
//        n    = sum_r n_r
//        mean = sum_r n_r mean_r / n
//        var  = sum_r n_r (var_r + (mean_r - mean)^2) / n,   var_r = 1/invstd_r^2 - eps
//        invstd = 1 / sqrt(var + eps)
//   4. running statistics from the global mean and the global unbiased var * n / (n - 1)
//   5. y = (x - mean) * invstd * weight + bias on the local rows
// BACKWARD (SyncBatchNormBackward::apply):
//   1. local per-channel sums sum_dy, sum_dy_xmu against the GLOBAL mean
//   2. all-reduce (SUM) [sum_dy (C) | sum_dy_xmu (C)]: one message of 2C floats
//   3. dx from the global sums and the global count (batch_norm_backward_elemt)
//   4. dweight = local sum_dy_xmu * invstd, dbias = local sum_dy: each rank returns its
//      own rows' share, and DDP's gradient all-reduce combines them like any parameter's.
//
// Every rank makes the same two collectives per layer per step (one all-gather forward,
// one all-reduce backward), in layer order, whatever its row count: a rank with no rows
// still joins both, which is why it cannot deadlock. Give SyncBatchNorm a process group of
// its own (not the one DDP's Reducer uses): the reducer's asynchronous bucket all-reduces
// run while backward runs, and two streams of messages on one connection would interleave.
// torch takes a process_group argument for the same reason of ordering.
//
// COST per layer per step: all-gather of (2C + 1) floats, all-reduce of 2C floats: latency
// bound (C is hundreds), 2 (N - 1) alpha-terms.
//
// Evaluation mode uses the running statistics and no communication (BatchNorm1d's).
// Errors: ConfigError when all ranks together have fewer than 2 rows (every rank throws).
// Thread safety: one thread per rank, as the process group.
#pragma once
#include <memory>

#include "batch_norm.h"
#include "bn_mlp.h"
#include "process_group.h"

namespace course {

/// Step 3: merges every rank's statistics, `gathered` being the all-gather output,
/// world blocks of [mean (C) | invstd (C) | count (1)] in rank order. Returns the
/// statistics of all rows (count = the total). REQUIRES: gathered.size() == world * (2C+1).
BatchNormStats sync_batch_norm_gather_stats(const std::vector<float>& gathered, int64_t channels,
                                            float eps);

/// The start of sync_batch_norm_gather_stats (given): checks that `gathered` is whole
/// blocks of 2C + 1 floats (ConfigError otherwise) and returns C zero means and inverse
/// standard deviations with count 0.
BatchNormStats empty_gathered_stats(const std::vector<float>& gathered, int64_t channels);

class SyncBatchNormBackward : public Node {
 public:
  /// Steps 1-4 of BACKWARD above. Returns {dx, dweight, dbias}.
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override { return "SyncBatchNormBackward"; }
  Tensor x, weight;
  BatchNormStats stats;  ///< the global statistics the forward used
  ProcessGroup* group = nullptr;
};

class SyncBatchNorm : public BatchNorm1d {
 public:
  /// REQUIRES: `group` outlives this layer; every rank builds the same layers.
  SyncBatchNorm(int64_t num_features, ProcessGroup& group, float eps = 1e-5f,
                float momentum = 0.1f);
  /// Training: FORWARD above (collective: every rank must call it). Evaluation: running
  /// statistics, no communication.
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  ProcessGroup& group() const { return *group_; }

 private:
  ProcessGroup* group_;
};

/// torch.nn.SyncBatchNorm.convert_sync_batchnorm: a new LayerStack with the same layers,
/// except that every BatchNorm1d becomes a SyncBatchNorm on `group` with the same
/// eps, momentum, training mode, parameter values and buffers (copied). The other layers
/// are shared with `model`, so use only the returned model afterwards. The state dict's
/// names do not change, so checkpoints load into either.
std::shared_ptr<LayerStack> convert_sync_batchnorm(const LayerStack& model, ProcessGroup& group);

}  // namespace course
