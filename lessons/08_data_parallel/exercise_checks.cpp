// exercise_checks.cpp: lesson 08, given: the argument checks of the exercises (see
// exercise_checks.h), and the message of ReplicaError (parallel_apply.h).
#include "exercise_checks.h"

#include <algorithm>
#include <string>

#include "error.h"
#include "parallel_apply.h"

namespace course {

ReplicaError::ReplicaError(int device, const std::string& phase, const std::string& cause)
    : Error("DataParallel: replica " + std::to_string(device) + " failed in " + phase +
            " on device " + std::to_string(device) + ": " + cause),
      device_(device) {}

void check_scatter_sizes(int64_t batch, int devices) {
  if (batch < 1 || devices < 1) {
    throw ConfigError("scatter: a batch of " + std::to_string(batch) + " rows over " +
                      std::to_string(devices) +
                      " devices; need at least one row and one device (is the batch empty?)");
  }
}

void check_scatter_batch(const Tensor& batch) {
  if (!batch.defined() || batch.dim() < 1) {
    throw ConfigError("scatter: need a batch with a dimension 0 to cut, got " +
                      (batch.defined() ? shape_str(batch.shape()) : std::string("undefined")));
  }
}

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

void check_replicas(const Module& master, const Replicas& replicas) {
  for (size_t k = 0; k < replicas.size(); ++k) {
    if (!replicas[k] || replicas[k].get() == &master) {
      throw ConfigError("replicate: replica " + std::to_string(k) +
                        " is null or the master itself");
    }
    check_same_structure(master, *replicas[k], k);
  }
}

void check_reduce_add(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) throw ConfigError("reduce_add: no tensors to add");
  for (size_t k = 1; k < tensors.size(); ++k) {
    if (tensors[k].shape() != tensors[0].shape()) {
      throw ConfigError("reduce_add: tensor " + std::to_string(k) + " has shape " +
                        shape_str(tensors[k].shape()) + ", tensor 0 " +
                        shape_str(tensors[0].shape()));
    }
  }
}

void check_parallel_apply(const DevicePool& pool, const Replicas& replicas,
                          const std::vector<Variable>& inputs) {
  if (replicas.size() != inputs.size() || replicas.size() > static_cast<size_t>(pool.size())) {
    throw ConfigError("parallel_apply: " + std::to_string(replicas.size()) + " replicas, " +
                      std::to_string(inputs.size()) + " inputs, " + std::to_string(pool.size()) +
                      " devices; need as many replicas as inputs, at most one per device");
  }
}

Tensor gather_buffer(const std::vector<Variable>& outputs, const GatherContext& context) {
  if (outputs.empty() || outputs.size() != context.replicas.size() || !context.pool ||
      !context.master || outputs.size() > static_cast<size_t>(context.pool->size())) {
    throw ConfigError("gather: " + std::to_string(outputs.size()) + " outputs for " +
                      std::to_string(context.replicas.size()) +
                      " replicas; need one output per replica, a pool and the master");
  }
  Shape shape = outputs[0].shape();
  if (shape.empty()) throw ConfigError("gather: the outputs are scalars; need a dimension 0");
  shape[0] = 0;
  for (size_t k = 0; k < outputs.size(); ++k) {
    Shape rest = outputs[k].shape();
    if (rest.empty() || !std::equal(rest.begin() + 1, rest.end(), shape.begin() + 1, shape.end())) {
      throw ConfigError("gather: output " + std::to_string(k) + " has shape " +
                        shape_str(outputs[k].shape()) + ", output 0 " +
                        shape_str(outputs[0].shape()) + "; they may differ in dimension 0 only");
    }
    shape[0] += rest[0];
  }
  return Tensor::empty(shape, outputs[0].device());
}

}  // namespace course
