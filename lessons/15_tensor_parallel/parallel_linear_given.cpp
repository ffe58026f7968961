// parallel_linear_given.cpp: lesson 15, given: the parallel layers' construction (this
// rank's slice of the full tensors) and their reassembly (see parallel_linear.h).
#include <algorithm>
#include <vector>

#include "error.h"
#include "parallel_linear.h"
#include "tp_ops.h"

namespace course {

namespace {

std::string rank_of(const ProcessGroup& tp) {
  return " (rank " + std::to_string(tp.rank()) + " of a tensor-parallel group of " +
         std::to_string(tp.size()) + ")";
}

void check_divides(const char* layer, const char* what, int64_t features, const ProcessGroup& tp) {
  if (features % tp.size() != 0) {
    throw ConfigError(std::string(layer) + ": " + what + " " + std::to_string(features) +
                      " is not divisible by the tensor-parallel size " + std::to_string(tp.size()) +
                      rank_of(tp));
  }
}

}  // namespace

ShardRange shard_range(int64_t padded, int rank, int T) {
  const int64_t count = padded / T;
  return {rank * count, count};
}

ColumnParallelLinear::ColumnParallelLinear(const Tensor& full_weight, const Tensor& full_bias,
                                           ProcessGroup& tp, bool gather_output, int64_t padded_out)
    : tp_(tp), gather_output_(gather_output) {
  if (full_weight.dim() != 2 ||
      (full_bias.defined() && (full_bias.dim() != 1 || full_bias.size(0) != full_weight.size(0)))) {
    throw ConfigError("ColumnParallelLinear: weight " + shape_str(full_weight.shape()) +
                      " and bias must be [out, in] and [out]" + rank_of(tp));
  }
  out_ = full_weight.size(0);
  in_ = full_weight.size(1);
  padded_out_ = padded_out == 0 ? out_ : padded_out;
  if (padded_out_ < out_) {
    throw ConfigError("ColumnParallelLinear: padded_out " + std::to_string(padded_out_) +
                      " is less than out " + std::to_string(out_));
  }
  check_divides("ColumnParallelLinear", "output features", padded_out_, tp);
  const ShardRange mine = shard_range(padded_out_, tp.rank(), tp.size());
  // Rows [begin, begin + count) of the padded weight: real rows first, zeros past out_.
  Tensor w = Tensor::zeros({mine.count, in_});
  Tensor b = Tensor::zeros({mine.count});
  const int64_t real = std::clamp<int64_t>(out_ - mine.begin, 0, mine.count);
  std::copy_n(full_weight.data() + mine.begin * in_, real * in_, w.data());
  if (full_bias.defined()) std::copy_n(full_bias.data() + mine.begin, real, b.data());
  weight_ = register_parameter("weight", w);
  if (full_bias.defined()) bias_ = register_parameter("bias", b);
}

std::string ColumnParallelLinear::describe() const {
  return "ColumnParallelLinear(in_features=" + std::to_string(in_) +
         ", out_features=" + std::to_string(out_) + ", this rank: rows " +
         std::to_string(shard_range(padded_out_, tp_.rank(), tp_.size()).begin) + ".." +
         std::to_string(shard_range(padded_out_, tp_.rank(), tp_.size()).begin + weight_.size(0)) +
         (padded_out_ != out_ ? ", padded to " + std::to_string(padded_out_) : "") +
         (gather_output_ ? ", gather_output" : "") + ")";
}

Tensor ColumnParallelLinear::full_weight() const {
  // Shards are consecutive rows: the all-gather's blocks, in rank order, are the padded
  // weight's rows.
  Tensor padded = Tensor::empty({padded_out_, in_});
  tp_.all_gather(weight_.data().span(), padded.span());
  return padded.rows(0, out_).clone();
}

Tensor ColumnParallelLinear::full_bias() const {
  if (!bias_.defined()) return Tensor();
  Tensor padded = Tensor::empty({padded_out_});
  tp_.all_gather(bias_.data().span(), padded.span());
  return Tensor::from_vector({out_}, std::span<const float>(padded.data(), out_));
}

RowParallelLinear::RowParallelLinear(const Tensor& full_weight, const Tensor& full_bias,
                                     ProcessGroup& tp, bool input_is_parallel)
    : tp_(tp), input_is_parallel_(input_is_parallel) {
  if (full_weight.dim() != 2 ||
      (full_bias.defined() && (full_bias.dim() != 1 || full_bias.size(0) != full_weight.size(0)))) {
    throw ConfigError("RowParallelLinear: weight " + shape_str(full_weight.shape()) +
                      " and bias must be [out, in] and [out]" + rank_of(tp));
  }
  out_ = full_weight.size(0);
  in_ = full_weight.size(1);
  check_divides("RowParallelLinear", "input features", in_, tp);
  const ShardRange mine = shard_range(in_, tp.rank(), tp.size());
  weight_ = register_parameter("weight", column_slice(full_weight, mine.begin, mine.count));
  if (full_bias.defined()) bias_ = register_parameter("bias", full_bias.clone());
}

std::string RowParallelLinear::describe() const {
  const ShardRange mine = shard_range(in_, tp_.rank(), tp_.size());
  return "RowParallelLinear(in_features=" + std::to_string(in_) +
         ", out_features=" + std::to_string(out_) + ", this rank: columns " +
         std::to_string(mine.begin) + ".." + std::to_string(mine.begin + mine.count) +
         (input_is_parallel_ ? "" : ", scatters its input") + ")";
}

Tensor RowParallelLinear::full_weight() const {
  return all_gather_columns(weight_.data(), tp_);
}

Tensor RowParallelLinear::full_bias() const {
  return bias_.defined() ? bias_.data().clone() : Tensor();
}

}  // namespace course
