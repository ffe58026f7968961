// data_parallel.cpp: lesson 08, DataParallel's forward: the four parts in torch's order
// (given; see data_parallel.h).
#include "data_parallel.h"

#include <chrono>

#include "error.h"
#include "gather.h"
#include "parallel_apply.h"
#include "replicate.h"
#include "scatter.h"

namespace course {
namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

DataParallel::DataParallel(std::shared_ptr<Module> module, const ModuleFactory& make_replica,
                           int devices)
    : times_(std::make_shared<DataParallelTimes>()) {
  if (!module) throw ConfigError("DataParallel: the module is null");
  if (devices < 1) {
    throw ConfigError("DataParallel: " + std::to_string(devices) + " devices; need at least 1");
  }
  if (!make_replica) throw ConfigError("DataParallel: no replica factory");
  module_ = register_module("module", std::move(module));
  for (int k = 0; k < devices; ++k) {
    std::shared_ptr<Module> replica = make_replica();
    if (!replica || replica == module_) {
      throw ConfigError("DataParallel: the replica factory must return a new module each call");
    }
    replicas_.push_back(std::move(replica));
  }
  replicate(*module_, replicas_);  // checks that the structures match, before any step
  pool_ = std::make_shared<DevicePool>(devices);
  times_->clear(devices);
}

Variable DataParallel::forward(const Variable& x) {
  if (x.requires_grad()) {
    throw ConfigError(
        "DataParallel::forward: the input requires grad; pass a batch of data "
        "(inputs get no gradient through DataParallel here)");
  }
  if (x.dim() < 1 || x.size(0) < 1) {
    throw ConfigError("DataParallel::forward: input of shape " + shape_str(x.shape()) +
                      "; need at least one row to scatter");
  }
  times_->clear(devices());

  auto t = Clock::now();
  const std::vector<Tensor> chunks = scatter(x.data(), devices());
  times_->scatter = seconds_since(t);
  int64_t rows = 0;
  for (const Tensor& chunk : chunks) rows += chunk.dim() >= 1 ? chunk.size(0) : 0;
  if (chunks.empty() || chunks.size() > replicas_.size() || rows != x.size(0)) {
    throw ConfigError("DataParallel::forward: scatter cut " + std::to_string(x.size(0)) +
                      " rows into " + std::to_string(chunks.size()) + " chunks of " +
                      std::to_string(rows) + " rows in all, for " +
                      std::to_string(replicas_.size()) +
                      " devices; expected at most one chunk per device, covering every row "
                      "(scatter.h)");
  }

  // Only as many replicas as there are chunks (torch: replicate(module, device_ids[:len(inputs)])).
  t = Clock::now();
  const std::vector<std::shared_ptr<Module>> used(replicas_.begin(),
                                                  replicas_.begin() + chunks.size());
  replicate(*module_, used);
  times_->replicate = seconds_since(t);

  std::vector<Variable> inputs;
  for (const Tensor& chunk : chunks) inputs.emplace_back(chunk);
  t = Clock::now();
  std::vector<double> busy;
  const std::vector<Variable> outputs = parallel_apply(*pool_, used, inputs, &busy);
  times_->forward = seconds_since(t);
  for (size_t k = 0; k < busy.size(); ++k) times_->forward_busy[k] = busy[k];

  t = Clock::now();
  Variable y = gather(outputs, GatherContext{pool_, module_, used, times_});
  times_->gather = seconds_since(t);
  return y;
}

std::string DataParallel::describe() const {
  return "DataParallel(devices=" + std::to_string(devices()) + ", module=" + module_->describe() +
         ")";
}

}  // namespace course
