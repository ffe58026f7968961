// recompute.cpp: lesson 18, part 1: activation recomputation (see recompute.h).
//
// Two halves of one idea: the forward runs fn without recording and keeps only its inputs;
// the backward runs fn again, recording, and back-propagates through what it recorded.
#include "recompute.h"

#include "error.h"
#include "tensor_ops.h"

namespace course {

Variable checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs) {
  if (!fn) throw ConfigError("checkpoint: fn is empty");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ConfigError("checkpoint: input " + std::to_string(i) + " is undefined");
    }
  }
  // BEGIN SOLUTION: run fn without recording, then record one CheckpointBackward on inputs
  Variable result;
  {
    const NoGradGuard no_grad;  // fn's ops record nothing: none of its activations is kept
    result = Variable(fn(inputs).data());
  }
  // Not should_record(inputs): the parameters fn captures need the node even when no
  // input requires grad (see WHEN IT RECORDS).
  if (!grad_mode_enabled()) return result;
  auto node = std::make_shared<CheckpointBackward>();
  node->fn = fn;
  for (const Variable& v : inputs) node->inputs.push_back(v.data());
  node->output_shape = result.shape();
  connect_node(result, node, inputs);
  return result;
  // END SOLUTION
}

std::vector<Tensor> CheckpointBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: fresh leaves, fn again with recording on, backward from its result
  const EnableGradGuard enable_grad;
  std::vector<Variable> leaves;
  leaves.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    leaves.emplace_back(inputs[i], /*requires_grad=*/needs_input_grad(i));
  }
  const Variable again = fn(leaves);
  if (again.shape() != output_shape) {
    throw ConfigError("checkpoint: the recomputed result is " + shape_str(again.shape()) +
                      ", the forward's was " + shape_str(output_shape) +
                      ": fn must be a function of its inputs alone");
  }
  if (again.requires_grad()) again.backward(g);
  std::vector<Tensor> grads(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!needs_input_grad(i)) continue;
    const Tensor& grad = leaves[i].grad();
    grads[i] = grad.defined() ? grad : Tensor::zeros(inputs[i].shape());
  }
  return grads;
  // END SOLUTION
}

}  // namespace course
