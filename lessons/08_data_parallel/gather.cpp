// gather.cpp: lesson 08, part 4: the concatenation on device 0 and GatherBackward, the
// way back to the master (see gather.h).
#include "gather.h"

#include <chrono>
#include <string>

#include "error.h"
#include "exercise_checks.h"
#include "node.h"
#include "parallel_apply.h"
#include "replicate.h"
#include "tensor_ops.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct GatherBackward final : Node {
  std::vector<Variable> outputs;  // each replica's output: the root of its graph
  GatherContext context;

  std::vector<Tensor> apply(const Tensor& g) override {
    auto t = Clock::now();
    std::vector<double> busy;  // per device: the seconds of its backward
    // Split g's rows by the outputs' sizes; run outputs[k].backward(its rows) on device k.
    // TODO(lesson08): g.rows per output, then run_on_devices(..., "backward")
    COURSE_TODO();
    if (context.times) {
      context.times->backward += seconds_since(t);
      for (size_t k = 0; k < busy.size() && k < context.times->backward_busy.size(); ++k) {
        context.times->backward_busy[k] += busy[k];
      }
    }
    t = Clock::now();
    // TODO(lesson08): 3. reduce_add_into the master, then clear the replicas' gradients
    COURSE_TODO();
    if (context.times) context.times->reduce_add += seconds_since(t);
    return {};  // no next functions: the master's gradients are already delivered
  }
  std::string name() const override { return "GatherBackward"; }
};

}  // namespace

Variable gather(const std::vector<Variable>& outputs, const GatherContext& context) {
  bool any_requires_grad = false;
  const Shape shape = gather_shape(outputs, context, any_requires_grad);
  Tensor joined = Tensor::empty(shape, outputs[0].device());
  // TODO(lesson08): copy_ each output into its rows of `joined`, in device order
  COURSE_TODO();
  Variable result(joined);
  if (grad_mode_enabled() && any_requires_grad) {
    auto node = std::make_shared<GatherBackward>();
    node->outputs = outputs;
    node->context = context;
    connect_node(result, node, {});  // no edges: the node delivers to the master itself
  }
  return result;
}

}  // namespace course
