// gather.cpp: lesson 08, part 4: the concatenation on device 0 and GatherBackward, the
// way back to the master (see gather.h).
#include "gather.h"

#include <chrono>
#include <string>

#include "error.h"
#include "exercise_checks.h"
#include "parallel_apply.h"
#include "replicate.h"
#include "tensor_ops.h"

namespace course {

Variable gather(const std::vector<Variable>& outputs, const GatherContext& context) {
  Tensor joined = gather_buffer(outputs, context);
  // TODO(lesson08): copy_ each output into its rows of `joined`, in device order
  COURSE_TODO();
  return gather_result(joined, outputs, context);
}

std::vector<Tensor> GatherBackward::apply(const Tensor& g) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<double> busy;  // per device: the seconds of its backward
  // Split g's rows by the outputs' sizes; run outputs[k].backward(its rows) on device k.
  // TODO(lesson08): g.rows per output, then run_on_devices(..., "backward")
  COURSE_TODO();
  if (context.times) context.times->add_backward(seconds_since(start), busy);
  const auto reduce_start = std::chrono::steady_clock::now();
  // TODO(lesson08): 3. reduce_add_into the master, then clear the replicas' gradients
  COURSE_TODO();
  if (context.times) context.times->reduce_add += seconds_since(reduce_start);
  return {};  // no next functions: the master's gradients are already delivered
}

}  // namespace course
