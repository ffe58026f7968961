// checkpoint.h: lesson 07, saving and restoring training state (given).
//
//   save_checkpoint("mlp.safetensors", model, &optimizer, {{"epoch", "3"}});
//   std::map<std::string, std::string> meta = load_checkpoint("mlp.safetensors", model,
//   &optimizer);
//
// One safetensors file (common/data/safetensors.h), written atomically:
//   "<name>"                 every entry of model.state_dict() ("0.weight", "0.bias", ...)
//   "optimizer.<i>.<key>"    the optimizer's state_tensors() (momentum buffers, moments)
//   __metadata__             the caller's strings, plus "optimizer_steps", "format", and
//                            "crc32.<name>" for every tensor (its bytes' CRC-32, in hex)
// Loading is bit-exact: the same bytes come back, so training resumed from a checkpoint
// continues exactly as if it had never stopped (lesson 11 relies on it).
//
// Loading checks the file first (checkpoint_problem): a tensor whose bytes no longer match
// its checksum (a flipped bit on disk), a tensor without a checksum or a checksum without
// its tensor (a renamed key), and a NaN or infinity in any tensor are ConfigErrors naming
// the file and the tensor. Files without checksums (written elsewhere) skip that part.
//
// Errors: ConfigError when the file does not fit the model (missing, unexpected or
// mis-shaped tensors; the message lists them); nothing is changed then.
#pragma once

#include <map>
#include <string>

#include "module.h"
#include "optimizer.h"
#include "safetensors.h"

namespace course {

/// `optimizer` may be null (weights only).
void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     const std::map<std::string, std::string>& metadata = {});

/// Restores the model (and the optimizer when given and saved). Returns the metadata.
std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer);

/// "" when `file` is sound, else what is wrong with it: "tensor '0.weight' does not match
/// its checksum (the file is corrupted)", "tensor '1.bias' holds nan at element 3", ...
std::string checkpoint_problem(const SafetensorsFile& file);

/// The whole-number metadata entry `key`; ConfigError naming `path` and the key when it is
/// missing or not a number.
int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key,
                     const std::string& path);

}  // namespace course
