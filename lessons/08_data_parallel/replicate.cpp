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
  [[maybe_unused]] const NamedTensors buffers = master.named_buffers();
  // Replica 0 takes the master's tensors, the others clones; clear their grads; copy buffers.
  // TODO(lesson08): set_data(master's tensor or a clone), zero_grad, copy_ the buffers
  COURSE_TODO();
}

Tensor reduce_add(const std::vector<Tensor>& tensors) {
  check_reduce_add(tensors);
  // TODO(lesson08): a clone of the first, then add_ the others in index order
  COURSE_TODO();
}

void reduce_add_into(const Module& master, const Replicas& replicas) {
  for (size_t k = 0; k < replicas.size(); ++k) check_same_structure(master, *replicas[k], k);
  const std::vector<Variable> params = master.parameters();
  std::vector<std::vector<Variable>> replica_params;
  for (const auto& replica : replicas) replica_params.push_back(replica->parameters());
  // Per parameter: reduce_add the replicas' defined grads, then hand the sum to the master's
  // AccumulateGrad (grad_accumulator(p)->apply(sum)).
  // TODO(lesson08): reduce_add per parameter, into grad_accumulator(master parameter)
  COURSE_TODO();
}

}  // namespace course
