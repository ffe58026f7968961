// parallel_linear.cpp: lesson 15: the forward passes of the column- and row-parallel
// layers: which slice each rank multiplies, and where f and g sit (parallel_linear.h).
#include "parallel_linear.h"

#include "error.h"
#include "ops.h"
#include "tp_ops.h"

namespace course {

Variable ColumnParallelLinear::forward(const Variable& x) {
  // x is whole on every rank. Its gradient will be this rank's part only, so x enters
  // through f; then this rank's rows of W give its columns of y.
  Variable y;
  // BEGIN SOLUTION: f on the input, linear with this rank's shard, gather if asked
  y = linear(copy_to_tp(x, tp_), weight_, bias_);
  if (gather_output_) y = gather_from_tp(y, tp_);
  // END SOLUTION
  return y;
}

Variable RowParallelLinear::forward(const Variable& x) {
  // This rank's input columns times its columns of W is a partial sum of y; g adds the
  // partial sums up. The bias is added once, after g.
  Variable y;
  // BEGIN SOLUTION: scatter unless already parallel, linear without bias, g, then the bias
  const Variable x_t = input_is_parallel_ ? x : scatter_to_tp(x, tp_);
  y = reduce_from_tp(linear(x_t, weight_, Variable()), tp_);
  if (bias_.defined()) y = y + bias_;
  // END SOLUTION
  return y;
}

}  // namespace course
