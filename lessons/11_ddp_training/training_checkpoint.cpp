// training_checkpoint.cpp: lesson 11, checkpoints for exact resume (given; see the header).
#include "training_checkpoint.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "checkpoint.h"
#include "error.h"
#include "safetensors.h"

namespace course {
namespace {

constexpr const char* kOptimizerPrefix = "optimizer.";
constexpr const char* kConfigPrefix = "config.";

// Strings travel as one float per byte (exact: 0..255).
std::vector<float> to_floats(const std::string& s) {
  return {s.begin(), s.end()};
}

std::string from_floats(const std::vector<float>& v) {
  std::string s(v.size(), '\0');
  for (size_t i = 0; i < v.size(); ++i) s[i] = static_cast<char>(static_cast<unsigned char>(v[i]));
  return s;
}

// "name\tdim,dim\n" per tensor, then "#key\tvalue\n" per metadata entry.
std::string manifest(const NamedTensors& tensors, const std::map<std::string, std::string>& meta) {
  std::string m;
  for (const auto& [name, t] : tensors) {
    m += name + "\t";
    for (int64_t d = 0; d < t.dim(); ++d) m += (d ? "," : "") + std::to_string(t.size(d));
    m += "\n";
  }
  for (const auto& [k, v] : meta) m += "#" + k + "\t" + v + "\n";
  return m;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, int epoch) {
  char name[64];
  std::snprintf(name, sizeof(name), "epoch-%04d.safetensors", epoch);
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return removed;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t at = name.rfind(".tmp.");
    if (name.rfind("epoch-", 0) != 0 || at == std::string::npos) continue;
    const std::string pid = name.substr(at + 5);
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // Its writer is gone when no process has that pid (kill(pid, 0) fails with ESRCH).
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno != ESRCH) continue;
    if (std::filesystem::remove(entry.path(), ec)) removed.push_back(entry.path().string());
  }
  return removed;
}

std::string save_training_checkpoint(const std::string& dir, int epoch, const Module& model,
                                     const Optimizer& optimizer, const RunConfig& config,
                                     const std::map<std::string, std::string>& extra) {
  std::filesystem::create_directories(dir);
  remove_stale_temporaries(dir);
  std::map<std::string, std::string> meta = extra;
  for (const auto& [k, v] : config) meta[kConfigPrefix + k] = v;
  meta["epoch"] = std::to_string(epoch);
  meta["sampler_epoch"] = std::to_string(epoch);  // the next epoch's order is (seed, epoch)
  std::string path = checkpoint_path(dir, epoch);
  save_checkpoint(path, model, &optimizer, meta);
  return path;
}

std::string config_differences(const RunConfig& saved, const RunConfig& current) {
  std::string out;
  for (const auto& [k, v] : current) {
    const auto it = saved.find(k);
    const std::string was = it == saved.end() ? "(absent)" : it->second;
    if (was != v) out += k + ": checkpoint " + was + ", this run " + v + "\n";
  }
  for (const auto& [k, v] : saved) {
    if (!current.count(k)) out += k + ": checkpoint " + v + ", this run (absent)\n";
  }
  return out;
}

std::vector<std::pair<int, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return found;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int epoch = 0;
    char tail[32] = {0};
    // Exactly "epoch-NNNN.safetensors": "epoch-0002.safetensors.tmp.123" is a crash's leftover.
    if (std::sscanf(name.c_str(), "epoch-%d.safetensors%31s", &epoch, tail) == 1 &&
        name == std::filesystem::path(checkpoint_path("", epoch)).filename().string()) {
      found.emplace_back(epoch, entry.path().string());
    }
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  return found;
}

void broadcast_named_tensors(NamedTensors& tensors, std::map<std::string, std::string>& metadata,
                             ProcessGroup& pg, int root) {
  const bool is_root = pg.rank() == root;
  std::vector<float> text = is_root ? to_floats(manifest(tensors, metadata)) : std::vector<float>{};
  std::vector<float> length{static_cast<float>(text.size())};
  pg.broadcast(length, root);
  text.resize(static_cast<size_t>(length[0]));
  pg.broadcast(text, root);
  if (!is_root) {
    tensors.clear();
    metadata.clear();
    std::istringstream lines(from_floats(text));
    std::string line;
    while (std::getline(lines, line)) {
      const auto tab = line.find('\t');
      if (line[0] == '#') {
        metadata[line.substr(1, tab - 1)] = line.substr(tab + 1);
        continue;
      }
      Shape shape;
      std::istringstream dims(line.substr(tab + 1));
      std::string d;
      while (std::getline(dims, d, ',')) shape.push_back(std::stoll(d));
      tensors.emplace_back(line.substr(0, tab), Tensor::zeros(shape));
    }
  }
  for (auto& [name, t] : tensors) pg.broadcast(t.device_span(), root);
}

std::optional<ResumeState> resume_from_latest(const std::string& dir, Module& model,
                                              Optimizer& optimizer, const RunConfig& config,
                                              ProcessGroup& pg, std::ostream& log) {
  // Rank 0 decides: status 0 = nothing to resume, 1 = loaded, 2 = refused (another
  // configuration), 3 = refused (checkpoints there, none of them sound).
  std::vector<float> status{0};
  NamedTensors tensors;
  std::map<std::string, std::string> meta;
  std::string refused, chosen;
  if (pg.rank() == 0) {
    for (const std::string& path : remove_stale_temporaries(dir)) {
      log << "resume: removed " << path << ", left by a writer that died mid-write" << std::endl;
    }
    for (const auto& [epoch, path] : list_checkpoints(dir)) {
      try {
        SafetensorsFile file = load_safetensors(path);
        const std::string problem = checkpoint_problem(file);
        if (!problem.empty()) throw ConfigError(problem);
        metadata_int(file.metadata, "epoch", path);
        metadata_int(file.metadata, "optimizer_steps", path);
        tensors = std::move(file.tensors);
        meta = std::move(file.metadata);
      } catch (const Error& e) {
        std::string reason = e.detail();  // without "rank 0 (pid ...)", and the path once
        if (reason.rfind(path + ": ", 0) == 0) reason.erase(0, path.size() + 2);
        log << "resume: skipping " << path << ": " << reason << std::endl;
        refused += "  " + path + ": " + reason + "\n";
        continue;
      }
      chosen = path;
      RunConfig saved;
      for (const auto& [k, v] : meta) {
        if (k.rfind(kConfigPrefix, 0) == 0) saved[k.substr(std::string(kConfigPrefix).size())] = v;
      }
      refused = config_differences(saved, config);
      status[0] = refused.empty() ? 1.0f : 2.0f;
      break;
    }
    if (status[0] == 0 && !refused.empty()) status[0] = 3;
  }
  pg.broadcast(status, 0);
  if (status[0] == 0) return std::nullopt;
  if (status[0] == 3) {
    if (pg.rank() == 0) {
      throw ConfigError("rank 0: --resume found no sound checkpoint in " + dir + ":\n" + refused +
                        "it will not start fresh over them: move them away (or pass another "
                        "--checkpoint-dir) to start a fresh run");
    }
    throw ConfigError("rank " + std::to_string(pg.rank()) +
                      ": rank 0 found no sound checkpoint to resume from (see rank 0's message)");
  }
  if (status[0] == 2) {
    if (pg.rank() == 0) {
      throw ConfigError("rank 0: --resume refuses " + chosen +
                        ": it was written by another configuration:\n" + refused +
                        "start a fresh run in another --checkpoint-dir, or run with the "
                        "checkpoint's settings");
    }
    throw ConfigError("rank " + std::to_string(pg.rank()) +
                      ": rank 0 refused the checkpoint to resume from (see rank 0's message)");
  }
  broadcast_named_tensors(tensors, meta, pg, 0);
  model.load_state_dict(tensors, kOptimizerPrefix);
  NamedTensors state;
  const std::string prefix = kOptimizerPrefix;
  for (const auto& [name, t] : tensors) {
    if (name.rfind(prefix, 0) == 0) state.emplace_back(name.substr(prefix.size()), t);
  }
  optimizer.load_state(state, metadata_int(meta, "optimizer_steps", chosen));
  ResumeState r;
  r.epoch = static_cast<int>(metadata_int(meta, "epoch", chosen));
  r.path = chosen;
  r.metadata = meta;
  if (pg.rank() == 0)
    log << "resume: loaded " << chosen << " (" << r.epoch << " epoch(s) done)" << std::endl;
  return r;
}

}  // namespace course
