// tp_ops.h: lesson 15: the four autograd functions that move activations between the
// ranks of a tensor-parallel group (Megatron-LM's mappings.py; the names are Megatron's).
//
//   Variable x_par = copy_to_tp(x, tp);        // f: identity forward, all-reduce backward
//   Variable y = reduce_from_tp(partial, tp);  // g: all-reduce forward, identity backward
//   Variable full = gather_from_tp(shard, tp); // [B, n] -> [B, n*T], backward: own slice
//   Variable mine = scatter_to_tp(full, tp);   // [B, n*T] -> [B, n], backward: all-gather
//
// WHY TWO CONJUGATE OPERATORS. A tensor-parallel layer pair (parallel_linear.h) starts from
// an input X that every rank of the group holds whole (replicated) and ends with an output
// every rank holds whole. In between each rank computes a part:
//
//            forward                              backward
//   X ──f──> X (same on all ranks)        dX <──f── sum over ranks of dX_t  (all-reduce)
//   Y_t ──g──> sum over ranks of Y_t      dY_t <──g── dY (same on all ranks)
//
// f is the identity going forward (every rank already holds X) but each rank's backward
// produces only the part of dL/dX that flows through its own slice of the layer, so f's
// backward must sum those parts: an all-reduce. g is its mirror: each rank's forward
// produces a partial sum, g all-reduces it, and going backward the gradient of a sum is
// handed unchanged to every addend. One all-reduce forward (g) and one backward (f) per
// layer pair, none in between.
//
// gather_from_tp and scatter_to_tp are the non-reduced forms for activations split along
// the last dimension (a column-parallel layer's output with gather_output = true; a
// row-parallel layer's input that is not already split): each is the other's backward.
// Rank t's slice of a [B, n*T] tensor is columns [t*n, t*n + n), rank t = tp.rank().
//
// What torch calls them: torch.distributed.tensor.parallel places these inside
// ColwiseParallel (input Replicate, f) and RowwiseParallel (output Partial -> Replicate,
// g); DTensor's redistribute does the gather and scatter (Shard(-1) <-> Replicate).
//
// Collective: every function and every backward is a collective over `tp`; every rank of
// the group must call it in the same order with the same shapes. The group must outlive
// the graph (the backward nodes keep a pointer to it). CPU tensors (tcp and gloo).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node.h"
#include "process_group.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// f: forward returns x unchanged; backward all-reduces (SUM) the gradient over `tp`.
/// Collective (in backward only). Megatron: copy_to_tensor_model_parallel_region.
Variable copy_to_tp(const Variable& x, ProcessGroup& tp);

/// g: forward returns the all-reduce (SUM) of x over `tp`; backward passes the gradient
/// unchanged. Collective (in forward only). Megatron: reduce_from_tensor_model_parallel_region.
Variable reduce_from_tp(const Variable& x, ProcessGroup& tp);

/// x [B, n] on every rank -> [B, n*T], rank t's x in columns [t*n, t*n + n). Backward:
/// rank t keeps columns [t*n, t*n + n) of the gradient. Collective (forward only).
/// Megatron: gather_from_tensor_model_parallel_region.
Variable gather_from_tp(const Variable& x, ProcessGroup& tp);

/// x [B, n*T], the same on every rank -> rank t's columns [t*n, t*n + n). Backward:
/// all-gathers the gradient's slices back to [B, n*T]. REQUIRES: T divides x's last
/// dimension (ConfigError naming both). Collective (backward only).
/// Megatron: scatter_to_tensor_model_parallel_region.
Variable scatter_to_tp(const Variable& x, ProcessGroup& tp);

// ---- The backward nodes (their apply() is part of the exercise) ----------------------

struct CopyToTpBackward final : Node {
  ProcessGroup* tp = nullptr;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "CopyToTpBackward"; }
};

struct ReduceFromTpBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "ReduceFromTpBackward"; }
};

struct GatherFromTpBackward final : Node {
  ProcessGroup* tp = nullptr;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "GatherFromTpBackward"; }
};

struct ScatterToTpBackward final : Node {
  ProcessGroup* tp = nullptr;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "ScatterToTpBackward"; }
};

// ---- Given: column slices of row-major matrices (tp_slices.cpp) ---------------------

/// Columns [begin, begin + count) of a 2-D x, as a new [rows, count] tensor.
Tensor column_slice(const Tensor& x, int64_t begin, int64_t count);

/// All-gathers x [B, n] over `tp` into [B, n*T], rank t's x in columns [t*n, t*n + n).
/// Collective.
Tensor all_gather_columns(const Tensor& x, ProcessGroup& tp);

}  // namespace course
