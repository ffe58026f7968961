// checkpoint.cpp: lesson 07, checkpoints in safetensors (given; see checkpoint.h).
#include "checkpoint.h"

#include <zlib.h>

#include <cmath>
#include <cstdio>

#include "error.h"
#include "safetensors.h"

namespace course {
namespace {
constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kFormat = "course-checkpoint-v1";
constexpr const char* kChecksumPrefix = "crc32.";

std::string checksum(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* bytes = reinterpret_cast<const Bytef*>(v.data());
  size_t left = v.size() * sizeof(float);
  while (left > 0) {  // crc32() takes a uInt length
    const uInt n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = ::crc32(crc, bytes, n);
    bytes += n;
    left -= n;
  }
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%08lx", static_cast<unsigned long>(crc));
  return hex;
}
}  // namespace

std::string checkpoint_problem(const SafetensorsFile& file) {
  const std::string prefix = kChecksumPrefix;
  bool has_checksums = false;
  for (const auto& [key, value] : file.metadata) {
    if (key.rfind(prefix, 0) != 0) continue;
    has_checksums = true;
    if (!file.contains(key.substr(prefix.size()))) {
      return "the metadata has a checksum for tensor '" + key.substr(prefix.size()) +
             "', which the file does not hold (a renamed or removed tensor)";
    }
  }
  for (const auto& [name, t] : file.tensors) {
    if (has_checksums) {
      const auto it = file.metadata.find(prefix + name);
      if (it == file.metadata.end()) {
        return "tensor '" + name + "' has no checksum in the metadata (a renamed tensor)";
      }
      if (it->second != checksum(t)) {
        return "tensor '" + name + "' does not match its checksum (the file is corrupted)";
      }
    }
    const std::vector<float> v = t.to_vector();
    for (size_t k = 0; k < v.size(); ++k) {
      if (!std::isfinite(v[k])) {
        return "tensor '" + name + "' holds " + (std::isnan(v[k]) ? "nan" : "inf") +
               " at element " + std::to_string(k) + " (training would be ruined from the start)";
      }
    }
  }
  return "";
}

int64_t metadata_int(const std::map<std::string, std::string>& metadata, const std::string& key,
                     const std::string& path) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) {
    throw ConfigError(path + ": the metadata has no '" + key +
                      "' (not a checkpoint of this course, or edited)");
  }
  const std::string& text = it->second;
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) {
    throw ConfigError(path + ": the metadata's '" + key + "' is '" + text +
                      "', not a whole number (the file was edited or damaged)");
  }
  return value;
}

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
  for (const auto& [name, t] : tensors) meta[kChecksumPrefix + name] = checksum(t);
  save_safetensors(path, tensors, meta);
}

std::map<std::string, std::string> load_checkpoint(const std::string& path, Module& model,
                                                   Optimizer* optimizer) {
  const SafetensorsFile file = load_safetensors(path);
  const std::string problem = checkpoint_problem(file);
  if (!problem.empty()) throw ConfigError(path + ": " + problem);
  model.load_state_dict(file.tensors, kOptimizerPrefix);
  if (optimizer != nullptr && file.metadata.count("optimizer_steps")) {
    NamedTensors state;
    const std::string prefix = kOptimizerPrefix;
    for (const auto& [name, t] : file.tensors) {
      if (name.rfind(prefix, 0) == 0) state.emplace_back(name.substr(prefix.size()), t);
    }
    optimizer->load_state(state, metadata_int(file.metadata, "optimizer_steps", path));
  }
  return file.metadata;
}

}  // namespace course
