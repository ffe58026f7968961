// process_group.cpp: the names of the reduce ops (see process_group.h).
//
// What this is not: a backend. The backends are process_group_tcp.cpp (the course's own,
// built from lessons 02-05), process_group_gloo.cpp and process_group_nccl.cpp.
#include "process_group.h"

#include "error.h"
#include "work.h"

namespace course {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return "sum";
    case ReduceOp::PRODUCT:
      return "prod";
    case ReduceOp::MIN:
      return "min";
    case ReduceOp::MAX:
      return "max";
    case ReduceOp::AVG:
      return "avg";
  }
  return "unknown";
}

ReduceOp parse_reduce_op(const std::string& name) {
  for (ReduceOp op :
       {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX, ReduceOp::AVG}) {
    if (name == reduce_op_name(op)) return op;
  }
  throw ConfigError("unknown reduce op '" + name + "': use one of sum, prod, min, max, avg");
}

WorkPtr ProcessGroup::reduce_scatter_async(std::span<const float> input, std::span<float> output,
                                           ReduceOp op) {
  reduce_scatter(input, output, op);
  return completed_work();
}

WorkPtr ProcessGroup::all_gather_async(std::span<const float> input, std::span<float> output) {
  all_gather(input, output);
  return completed_work();
}

}  // namespace course
