// replicate.cpp: lesson 08, part 2: replicate and its adjoint, the reduce-add (see
// replicate.h).
#include "replicate.h"

#include <string>

#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {
namespace {

// Throws unless replica k lists the master's names and shapes (parameters, then buffers).
void check_same_structure(const Module& master, const Module& replica, size_t k) {
  const NamedTensors a = master.state_dict(), b = replica.state_dict();
  const std::string where = "replicate: replica " + std::to_string(k);
  if (a.size() != b.size()) {
    throw ConfigError(where + " has " + std::to_string(b.size()) + " parameters and buffers, the " +
                      "master " + std::to_string(a.size()) +
                      ": does the replica factory build the master's model?");
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || a[i].second.shape() != b[i].second.shape()) {
      throw ConfigError(where + ": entry " + std::to_string(i) + " is \"" + b[i].first + "\" " +
                        shape_str(b[i].second.shape()) + ", the master's \"" + a[i].first + "\" " +
                        shape_str(a[i].second.shape()) +
                        ": does the replica factory build the master's model?");
    }
  }
}

}  // namespace

void replicate(const Module& master, const std::vector<std::shared_ptr<Module>>& replicas) {
  for (size_t k = 0; k < replicas.size(); ++k) {
    if (!replicas[k] || replicas[k].get() == &master) {
      throw ConfigError("replicate: replica " + std::to_string(k) +
                        " is null or the master itself");
    }
    check_same_structure(master, *replicas[k], k);
  }
  const std::vector<Variable> params = master.parameters();
  [[maybe_unused]] const NamedTensors buffers = master.named_buffers();
  // Replica 0 takes the master's tensors, the others clones; clear their grads; copy buffers.
  // TODO(lesson08): set_data(master's tensor or a clone), zero_grad, copy_ the buffers
  COURSE_TODO();
}

Tensor reduce_add(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) throw ConfigError("reduce_add: no tensors to add");
  for (size_t k = 1; k < tensors.size(); ++k) {
    if (tensors[k].shape() != tensors[0].shape()) {
      throw ConfigError("reduce_add: tensor " + std::to_string(k) + " has shape " +
                        shape_str(tensors[k].shape()) + ", tensor 0 " +
                        shape_str(tensors[0].shape()));
    }
  }
  // TODO(lesson08): a clone of the first, then add_ the others in index order
  COURSE_TODO();
}

void reduce_add_into(const Module& master, const std::vector<std::shared_ptr<Module>>& replicas) {
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
