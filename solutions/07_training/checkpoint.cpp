// checkpoint.cpp: lesson 07, checkpoints in safetensors (given; see checkpoint.h).
#include "checkpoint.h"

#include "error.h"
#include "safetensors.h"

namespace course {
namespace {
constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kFormat = "course-checkpoint-v1";
}  // namespace

void save_checkpoint(const std::string& path, const Module& model, const Optimizer* optimizer,
                     const std::map<std::string, std::string>& metadata) {
  NamedTensors tensors = model.state_dict();
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = kFormat;
  if (optimizer != nullptr) {
    for (auto& [name, t] : optimizer->state_tensors()) {
      tensors.emplace_back(kOptimizerPrefix + name, t);
    }
    meta["optimizer_steps"] = std::to_string(optimizer->step_count());
  }
  save_safetensors(path, tensors, meta);
}

std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer) {
  const SafetensorsFile file = load_safetensors(path);
  model.load_state_dict(file.tensors, kOptimizerPrefix);
  if (optimizer != nullptr && file.metadata.count("optimizer_steps")) {
    NamedTensors state;
    const std::string prefix = kOptimizerPrefix;
    for (const auto& [name, t] : file.tensors) {
      if (name.rfind(prefix, 0) == 0) state.emplace_back(name.substr(prefix.size()), t);
    }
    optimizer->load_state(state, std::stoll(file.metadata.at("optimizer_steps")));
  }
  return file.metadata;
}

}  // namespace course
