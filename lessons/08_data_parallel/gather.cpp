// gather.cpp: lesson 08, part 4: the concatenation on device 0 and GatherBackward, the
// way back to the master (see gather.h).
#include "gather.h"

#include <chrono>
#include <string>

#include "error.h"
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
  if (outputs.empty() || outputs.size() != context.replicas.size() || !context.pool ||
      !context.master || outputs.size() > static_cast<size_t>(context.pool->size())) {
    throw ConfigError("gather: " + std::to_string(outputs.size()) + " outputs for " +
                      std::to_string(context.replicas.size()) +
                      " replicas; need one output per replica, a pool and the master");
  }
  Shape shape = outputs[0].shape();
  if (shape.empty()) throw ConfigError("gather: the outputs are scalars; need a dimension 0");
  shape[0] = 0;
  bool any_requires_grad = false;
  for (size_t k = 0; k < outputs.size(); ++k) {
    Shape rest = outputs[k].shape();
    if (rest.empty() || !std::equal(rest.begin() + 1, rest.end(), shape.begin() + 1, shape.end())) {
      throw ConfigError("gather: output " + std::to_string(k) + " has shape " +
                        shape_str(outputs[k].shape()) + ", output 0 " +
                        shape_str(outputs[0].shape()) + "; they may differ in dimension 0 only");
    }
    shape[0] += rest[0];
    any_requires_grad |= outputs[k].requires_grad();
  }
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
