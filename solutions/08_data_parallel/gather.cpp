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
  // BEGIN SOLUTION: copy_ each output into its rows of `joined`, in device order
  int64_t begin = 0;
  for (const Variable& out : outputs) {
    copy_(joined.rows(begin, out.size(0)), out.data());
    begin += out.size(0);
  }
  // END SOLUTION
  return gather_result(joined, outputs, context);
}

std::vector<Tensor> GatherBackward::apply(const Tensor& g) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<double> busy;  // per device: the seconds of its backward
  // Split g's rows by the outputs' sizes; run outputs[k].backward(its rows) on device k.
  // BEGIN SOLUTION: g.rows per output, then run_on_devices(..., "backward")
  std::vector<std::function<void()>> tasks;
  int64_t begin = 0;
  for (const Variable& out : outputs) {
    const Tensor chunk = g.rows(begin, out.size(0));
    begin += out.size(0);
    tasks.push_back([out, chunk] { out.backward(chunk); });
  }
  busy = run_on_devices(*context.pool, tasks, "backward");
  // END SOLUTION
  if (context.times) context.times->add_backward(seconds_since(start), busy);
  const auto reduce_start = std::chrono::steady_clock::now();
  // BEGIN SOLUTION: 3. reduce_add_into the master, then clear the replicas' gradients
  reduce_add_into(*context.master, context.replicas);
  for (const auto& replica : context.replicas) replica->zero_grad(/*set_to_none=*/true);
  // END SOLUTION
  if (context.times) context.times->reduce_add += seconds_since(reduce_start);
  return {};  // no next functions: the master's gradients are already delivered
}

}  // namespace course
