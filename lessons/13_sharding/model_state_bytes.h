// model_state_bytes.h: lesson 13, given: the model state one rank holds, in bytes, counted
// from its tensors (the ZeRO paper's model states: parameters, gradients, optimizer state),
// for a module that is not sharded by FSDP (whose ledger follows its allocations,
// memory_ledger.h): lesson 15's shards, a bench's rows.
//
//   const ModelStateBytes bytes = model_state_bytes(model, optimizer);
//   ledger.add(MemoryKind::parameters, bytes.parameters, "the shards");
#pragma once

#include <cstdint>

#include "module.h"
#include "optimizer.h"

namespace course {

/// The model state a rank holds, in bytes (float32).
struct ModelStateBytes {
  int64_t parameters = 0;  ///< every parameter of the module
  int64_t gradients = 0;   ///< their gradients, those defined
  int64_t optimizer = 0;   ///< the optimizer's state tensors (0 before its first step)
  /// The sum of the three.
  int64_t total() const { return parameters + gradients + optimizer; }
};

/// Counts `model`'s parameters and gradients and `optimizer`'s state tensors.
ModelStateBytes model_state_bytes(const Module& model, const Optimizer& optimizer);

}  // namespace course
