// checkpoint.h: lesson 07, saving and restoring training state (given).
//
//   save_checkpoint("mlp.safetensors", model, &optimizer, {{"epoch", "3"}});
//   std::map<std::string, std::string> meta = load_checkpoint("mlp.safetensors", model,
//   &optimizer);
//
// One safetensors file (common/data/safetensors.h), written atomically:
//   "<name>"                 every entry of model.state_dict() ("0.weight", "0.bias", ...)
//   "optimizer.<i>.<key>"    the optimizer's state_tensors() (momentum buffers, moments)
//   __metadata__             the caller's strings, plus "optimizer_steps" and "format"
// Loading is bit-exact: the same bytes come back, so training resumed from a checkpoint
// continues exactly as if it had never stopped (lesson 11 relies on it).
//
// Errors: ConfigError when the file does not fit the model (missing, unexpected or
// mis-shaped tensors; the message lists them); nothing is changed then.
#pragma once

#include <map>
#include <string>

#include "module.h"
#include "optimizer.h"

namespace course {

/// `optimizer` may be null (weights only).
void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     const std::map<std::string, std::string>& metadata = {});

/// Restores the model (and the optimizer when given and saved). Returns the metadata.
std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer);

}  // namespace course
