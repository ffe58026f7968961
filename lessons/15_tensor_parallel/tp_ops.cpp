// tp_ops.cpp: lesson 15: Megatron's f and g (copy_to_tp, reduce_from_tp) and the gather and
// scatter along the last dimension, forward and backward (see tp_ops.h for the picture).
#include "tp_ops.h"

#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {

Variable copy_to_tp(const Variable& x, ProcessGroup& tp) {
  // f forward: every rank already holds x whole; nothing moves. The output is a new
  // Variable on the same numbers, so that backward passes through this node.
  Variable out;
  // TODO(lesson15): out shares x's numbers; record CopyToTpBackward with the group
  COURSE_TODO();
  return out;
}

std::vector<Tensor> CopyToTpBackward::apply(const Tensor& g) {
  // f backward: this rank's g is only the part of dL/dx that flowed through its slice of
  // the next layer; the whole gradient is the sum over the group.
  Tensor grad;
  // TODO(lesson15): a copy of g, all-reduced (SUM) over the group
  COURSE_TODO();
  return {grad};
}

Variable reduce_from_tp(const Variable& x, ProcessGroup& tp) {
  // g forward: x is this rank's partial sum; every rank gets the total.
  Variable out;
  // TODO(lesson15): a copy of x all-reduced (SUM), then record ReduceFromTpBackward
  COURSE_TODO();
  return out;
}

std::vector<Tensor> ReduceFromTpBackward::apply(const Tensor& g) {
  // g backward: d(sum of addends)/d(one addend) = 1, and g is the same on every rank.
  // TODO(lesson15): the gradient unchanged
  COURSE_TODO();
}

Variable gather_from_tp(const Variable& x, ProcessGroup& tp) {
  if (x.dim() != 2) {
    throw ConfigError("gather_from_tp: expected a 2-D [B, n] input, got " + shape_str(x.shape()) +
                      " on tensor-parallel rank " + std::to_string(tp.rank()));
  }
  Variable out;
  // TODO(lesson15): all_gather_columns, then record GatherFromTpBackward with the group
  COURSE_TODO();
  return out;
}

std::vector<Tensor> GatherFromTpBackward::apply(const Tensor& g) {
  // g is [B, n*T]: this rank's input was columns [t*n, t*n + n) of the output.
  // TODO(lesson15): this rank's columns of g
  COURSE_TODO();
}

Variable scatter_to_tp(const Variable& x, ProcessGroup& tp) {
  const int T = tp.size();
  if (x.dim() != 2 || x.size(1) % T != 0) {
    throw ConfigError("scatter_to_tp: the input " + shape_str(x.shape()) +
                      " must be 2-D with a last dimension that " + std::to_string(T) +
                      " ranks divide (tensor-parallel rank " + std::to_string(tp.rank()) + ")");
  }
  Variable out;
  // TODO(lesson15): this rank's columns of x, then record ScatterToTpBackward
  COURSE_TODO();
  return out;
}

std::vector<Tensor> ScatterToTpBackward::apply(const Tensor& g) {
  // g is [B, n], this rank's slice's gradient; the input's gradient is [B, n*T].
  // TODO(lesson15): all-gather the slices' gradients along the columns
  COURSE_TODO();
}

}  // namespace course
