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
  // TODO(lesson15): f on the input, linear with this rank's shard, gather if asked
  COURSE_TODO();
  return y;
}

Variable RowParallelLinear::forward(const Variable& x) {
  // This rank's input columns times its columns of W is a partial sum of y; g adds the
  // partial sums up. The bias is added once, after g.
  Variable y;
  // TODO(lesson15): scatter unless already parallel, linear without bias, g, then the bias
  COURSE_TODO();
  return y;
}

}  // namespace course
