// parallel_linear.h: lesson 15: Megatron-LM's ColumnParallelLinear and RowParallelLinear
// (torch.distributed.tensor.parallel: ColwiseParallel and RowwiseParallel), each built from
// the full layer's weight and bias, keeping this rank's slice.
//
//   ColumnParallelLinear fc1(full_w1, full_b1, tp);            // H -> 4H, output sharded
//   RowParallelLinear fc2(full_w2, full_b2, tp);               // 4H -> H, input sharded
//   Variable y = fc2.forward(relu(fc1.forward(x)));            // x and y whole on every rank
//
// A linear layer y = x Wᵀ + b has W [out, in]. With T ranks, rank t = tp.rank():
//
//   COLUMN-PARALLEL (split the output features; W's rows, the columns of Wᵀ)
//     rank t holds W rows [t*o, t*o + o) and b[t*o, t*o + o), o = out / T
//     x [B, in] whole on every rank ──f──> x Wₜᵀ + bₜ = y_t [B, o]  (columns t*o.. of y)
//     gather_output: gather_from_tp(y_t) = y [B, out] on every rank; otherwise y_t
//
//   ROW-PARALLEL (split the input features; W's columns)
//     rank t holds W columns [t*i, t*i + i), i = in / T, and the whole bias b
//     x_t [B, i] (columns t*i.. of x) ──> x_t Wₜᵀ = partial y [B, out] ──g──> Σₜ + b
//     input_is_parallel = false: x [B, in] arrives whole and scatter_to_tp cuts x_t
//
//   x [B,H] ──f──> Column(H->4H): y_t = x W1ₜᵀ + b1ₜ ──ReLU──> Row(4H->H): y_t W2ₜᵀ ──g──> + b2
//               (all-reduce in backward)   [B, 4H/T] on rank t, no communication     (all-reduce
//                                                                                   in forward)
//
// Because ReLU acts element by element, relu(y)'s columns are relu of y's columns: the
// column layer's sharded output is exactly the row layer's sharded input. The pair costs
// one all-reduce of [B, out] forward (g) and one of [B, in] backward (f).
//
// BIAS. The row layer's partial outputs are summed by g, so its bias is added once, after
// the all-reduce, and is held whole by every rank (Megatron: skip_bias_add aside, the
// bias is added to output_ after reduce_from_tensor_model_parallel_region). Adding it
// before g adds it T times. Its gradient is the same on every rank (it only sees the
// reduced output's gradient), so the replicas stay equal without communication.
//
// SHAPES THAT DO NOT DIVIDE. The constructor takes a padded_out >= out for the column layer
// (the classifier's classes, padded to a multiple of T as vocab_parallel_loss.h says): rows
// [out, padded_out) are zeros, and full_weight() leaves them out. Otherwise T must divide
// the split dimension (ConfigError naming both numbers).
//
// Parameter names are the unsharded layer's ("weight", "bias"), so a state dict of shards
// has the full model's names; full_weight() / full_bias() reassemble the full tensors
// (collective), which is what --checkpoint writes.
#pragma once

#include <cstdint>
#include <string>

#include "module.h"
#include "process_group.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// The rows [begin, begin + count) of the split dimension that rank `rank` of `T` holds
/// when `padded` rows are cut into T equal shards.
struct ShardRange {
  int64_t begin = 0;
  int64_t count = 0;
};
ShardRange shard_range(int64_t padded, int rank, int T);

class ColumnParallelLinear : public Module {
 public:
  /// full_weight [out, in], full_bias [out] (or undefined: no bias). padded_out (0: out)
  /// >= out, and T must divide it. Keeps rows shard_range(padded_out, t, T) of the weight
  /// padded with zero rows. Not collective (every rank holds the full tensors).
  ColumnParallelLinear(const Tensor& full_weight, const Tensor& full_bias, ProcessGroup& tp,
                       bool gather_output = false, int64_t padded_out = 0);

  /// x [B, in], the same on every rank of the group. Returns this rank's [B, out_p / T]
  /// (out_p = padded out), or with gather_output the whole [B, out_p]. Collective: the
  /// all-reduce of f in backward, the all-gather with gather_output.
  Variable forward(const Variable& x) override;
  std::string describe() const override;

  /// The unsharded [out, in] weight and [out] bias (padding dropped). Collective.
  Tensor full_weight() const;
  Tensor full_bias() const;

  const Variable& weight() const { return weight_; }  ///< [out_p / T, in]
  const Variable& bias() const { return bias_; }      ///< [out_p / T] or undefined
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  int64_t padded_out_features() const { return padded_out_; }

 private:
  ProcessGroup& tp_;
  bool gather_output_;
  int64_t in_, out_, padded_out_;
  Variable weight_, bias_;
};

class RowParallelLinear : public Module {
 public:
  /// full_weight [out, in], full_bias [out] (or undefined). REQUIRES: T divides in.
  /// Keeps columns shard_range(in, t, T) of the weight and the whole bias.
  RowParallelLinear(const Tensor& full_weight, const Tensor& full_bias, ProcessGroup& tp,
                    bool input_is_parallel = true);

  /// x: this rank's [B, in / T] (input_is_parallel) or the whole [B, in]. Returns the whole
  /// [B, out] on every rank: the partial products all-reduced, then the bias added once.
  /// Collective: the all-reduce of g (and scatter_to_tp's all-gather in backward).
  Variable forward(const Variable& x) override;
  std::string describe() const override;

  Tensor full_weight() const;  ///< Collective.
  Tensor full_bias() const;    ///< The bias itself (replicated).

  const Variable& weight() const { return weight_; }  ///< [out, in / T]
  const Variable& bias() const { return bias_; }      ///< [out], or undefined
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  ProcessGroup& tp_;
  bool input_is_parallel_;
  int64_t in_, out_;
  Variable weight_, bias_;
};

}  // namespace course
