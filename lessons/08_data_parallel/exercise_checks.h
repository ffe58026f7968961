// exercise_checks.h: lesson 08, given: the argument checks that open the exercise
// functions of scatter.cpp, replicate.cpp, parallel_apply.cpp and gather.cpp. Each throws a
// ConfigError that says what was passed and what is needed; the exercises call them first
// and may then take their arguments as well formed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "device_pool.h"
#include "gather.h"
#include "module.h"
#include "replicate.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// Throws unless `batch` rows can go to `devices` devices (both at least 1).
void check_scatter_sizes(int64_t batch, int devices);
/// Throws unless `batch` is defined and has a dimension 0 to cut.
void check_scatter_batch(const Tensor& batch);
/// Throws unless replica k lists the master's names and shapes (parameters, then buffers).
void check_same_structure(const Module& master, const Module& replica, size_t k);
/// Throws unless every replica is non-null, not the master, and built like the master.
void check_replicas(const Module& master, const Replicas& replicas);
/// Throws unless `tensors` is non-empty and all of one shape.
void check_reduce_add(const std::vector<Tensor>& tensors);
/// Throws unless there are as many replicas as inputs and at most one per device of `pool`.
void check_parallel_apply(const DevicePool& pool, const Replicas& replicas,
                          const std::vector<Variable>& inputs);
/// Checks gather's arguments (one output per replica, a pool, the master; outputs that
/// differ in dimension 0 at most) and returns the buffer of their concatenation: an empty
/// tensor on outputs[0]'s device, its dimension 0 the sum of theirs.
Tensor gather_buffer(const std::vector<Variable>& outputs, const GatherContext& context);

}  // namespace course
