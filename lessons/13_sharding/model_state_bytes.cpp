// model_state_bytes.cpp: lesson 13, given: the model state counted from the tensors
// (model_state_bytes.h).
#include "model_state_bytes.h"

namespace course {

ModelStateBytes model_state_bytes(const Module& model, const Optimizer& optimizer) {
  ModelStateBytes bytes;
  for (const Variable& p : model.parameters()) {
    bytes.parameters += 4 * p.numel();
    if (p.grad().defined()) bytes.gradients += 4 * p.grad().numel();
  }
  for (const auto& [name, t] : optimizer.state_tensors()) bytes.optimizer += 4 * t.numel();
  return bytes;
}

}  // namespace course
