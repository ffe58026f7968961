// reduce_op.cpp: lesson 04: the element-wise combine of every ReduceOp (see reduce_op.h).
#include "reduce_op.h"

#include <algorithm>
#include <string>

#include "collective_checks.h"
#include "error.h"

namespace course {

void reduce_op_apply(ReduceOp op, std::span<float> acc, std::span<const float> in) {
  check_same_length(std::string("reduce_op_apply(") + reduce_op_name(op) + ")", "acc", acc.size(),
                    "in", in.size());
  const size_t n = acc.size();
  // BEGIN SOLUTION: one loop per op (the switch outside the loop); AVG combines like SUM
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      for (size_t i = 0; i < n; ++i) acc[i] += in[i];
      break;
    case ReduceOp::PRODUCT:
      for (size_t i = 0; i < n; ++i) acc[i] *= in[i];
      break;
    case ReduceOp::MIN:
      for (size_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], in[i]);
      break;
    case ReduceOp::MAX:
      for (size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], in[i]);
      break;
  }
  // END SOLUTION
}

void reduce_op_finish(ReduceOp op, std::span<float> acc, int world) {
  // BEGIN SOLUTION: AVG: divide every element by world; every other op: nothing to do
  if (op != ReduceOp::AVG) return;
  const float n = static_cast<float>(world);
  for (float& x : acc) x /= n;
  // END SOLUTION
}

}  // namespace course
