// reduce_scatter_naive.cpp: lesson 04: reduce to rank 0, then scatter
// (see reduce_scatter_naive.h).
#include "reduce_scatter_naive.h"

#include <vector>

#include "collective_checks.h"
#include "reduce_binomial_tree.h"
#include "scatter_flat.h"

namespace course {

void reduce_scatter_naive(TcpComm& comm, std::span<const float> input, std::span<float> output,
                          ReduceOp op) {
  check_world_multiple("reduce_scatter", "input", input.size(), "output", output.size(),
                       comm.size());
  // TODO(lesson04): reduce a copy of input to root 0, then scatter_flat it from 0
  COURSE_TODO();
}

}  // namespace course
