// pp_checkpoint.cpp: see pp_checkpoint.h.
#include "pp_checkpoint.h"

#include <algorithm>
#include <memory>
#include <span>

#include "checkpoint.h"
#include "error.h"
#include "rng.h"
#include "sequential.h"

namespace course {
namespace {

// make_mlp(sizes): its numbers are overwritten, so the seed does not matter.
std::shared_ptr<Sequential> whole_model(const std::vector<int64_t>& sizes) {
  Rng rng(0);
  return make_mlp(sizes, rng);
}

// The Linear layer a parameter name belongs to: "6.weight" is module 6, layer 3.
int layer_of(const std::string& name) {
  return std::stoi(name.substr(0, name.find('.'))) / 2;
}

std::span<float> values(const Tensor& t) {
  return {t.data(), static_cast<size_t>(t.numel())};
}

}  // namespace

void load_stage_state(const std::string& path, const std::vector<int64_t>& sizes,
                      StageModule& stage) {
  const std::shared_ptr<Sequential> whole = whole_model(sizes);
  load_checkpoint(path, *whole, nullptr);
  const NamedTensors all = whole->state_dict();
  NamedTensors mine;
  for (const auto& [name, tensor] : stage.state_dict()) {
    for (const auto& [file_name, file_tensor] : all) {
      if (file_name == name) mine.emplace_back(name, file_tensor);
    }
  }
  stage.load_state_dict(mine);
}

void save_pipeline_state(const std::string& path, const DeviceMesh& mesh,
                         const std::vector<int64_t>& sizes, const std::vector<int>& bounds,
                         const StageModule& stage,
                         const std::map<std::string, std::string>& metadata) {
  if (mesh.coordinate("dp") != 0) return;
  ProcessGroup& group = *mesh.group("pp");  // group rank = stage
  if (mesh.coordinate("pp") != 0) {
    for (const auto& named : stage.state_dict()) {
      const Tensor& t = named.second;
      group.send(values(t), 0, kCheckpointTag);
    }
    return;
  }
  // Stage 0: its own layers, then every other stage's in the whole model's order, which is
  // each stage's own order (ascending layer, weight before bias), stage after stage.
  const std::shared_ptr<Sequential> whole = whole_model(sizes);
  const NamedTensors own = stage.state_dict();
  for (const auto& [name, tensor] : whole->state_dict()) {
    const int layer = layer_of(name);
    if (layer < bounds.at(1)) {
      for (const auto& [own_name, own_tensor] : own) {
        if (own_name == name) std::copy_n(own_tensor.data(), own_tensor.numel(), tensor.data());
      }
      continue;
    }
    int s = 1;
    while (layer >= bounds.at(s + 1)) ++s;
    group.recv(values(tensor), s, kCheckpointTag);  // stage s is group rank s
  }
  save_checkpoint(path, *whole, nullptr, metadata);
}

}  // namespace course
