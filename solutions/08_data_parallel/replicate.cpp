// replicate.cpp: lesson 08, part 2: replicate and its adjoint, the reduce-add (see
// replicate.h).
#include "replicate.h"

#include "error.h"
#include "exercise_checks.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {

void replicate(const Module& master, const Replicas& replicas) {
  check_replicas(master, replicas);
  const std::vector<Variable> params = master.parameters();
  const NamedTensors buffers = master.named_buffers();
  // Replica 0 takes the master's tensors, the others clones; clear their grads; copy buffers.
  // BEGIN SOLUTION: set_data(master's tensor or a clone), zero_grad, copy_ the buffers
  for (size_t k = 0; k < replicas.size(); ++k) {
    const std::vector<Variable> mine = replicas[k]->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      mine[i].set_data(k == 0 ? params[i].data() : params[i].data().clone());
      mine[i].zero_grad(/*set_to_none=*/true);
    }
    const NamedTensors my_buffers = replicas[k]->named_buffers();
    for (size_t i = 0; i < buffers.size(); ++i) copy_(my_buffers[i].second, buffers[i].second);
  }
  // END SOLUTION
}

Tensor reduce_add(const std::vector<Tensor>& tensors) {
  check_reduce_add(tensors);
  // BEGIN SOLUTION: a clone of the first, then add_ the others in index order
  Tensor sum = tensors[0].clone();
  for (size_t k = 1; k < tensors.size(); ++k) add_(sum, tensors[k]);
  return sum;
  // END SOLUTION
}

void reduce_add_into(const Module& master, const Replicas& replicas) {
  for (size_t k = 0; k < replicas.size(); ++k) check_same_structure(master, *replicas[k], k);
  const std::vector<Variable> params = master.parameters();
  std::vector<std::vector<Variable>> replica_params;
  for (const auto& replica : replicas) replica_params.push_back(replica->parameters());
  // Per parameter: reduce_add the replicas' defined grads, then hand the sum to the master's
  // AccumulateGrad (grad_accumulator(p)->apply(sum)).
  // BEGIN SOLUTION: reduce_add per parameter, into grad_accumulator(master parameter)
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<Tensor> grads;
    for (const auto& mine : replica_params) {
      Tensor g = mine[i].grad();
      if (g.defined()) grads.push_back(std::move(g));
    }
    if (grads.empty() || !params[i].requires_grad()) continue;
    grad_accumulator(params[i])->apply(reduce_add(grads));
  }
  // END SOLUTION
}

}  // namespace course
