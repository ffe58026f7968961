// distributed_data_parallel.cpp: lesson 10, the DDP wrapper (see the header). Given code.
#include "distributed_data_parallel.h"

#include <utility>

namespace course {

namespace {

std::shared_ptr<Module> synced(std::shared_ptr<Module> module, ProcessGroup& group) {
  broadcast_parameters(*module, group);
  return module;
}

}  // namespace

void broadcast_parameters(Module& module, ProcessGroup& group) {
  if (group.size() == 1) return;
  for (const Variable& p : module.parameters()) group.broadcast(p.data().span(), 0);
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> module,
                                                 ProcessGroup& group, ReducerOptions options)
    : module_(synced(std::move(module), group)),
      options_(options),
      reducer_(module_->named_parameters(), group, options) {}

Variable DistributedDataParallel::forward(const Variable& x) {
  const bool arm = grad_mode_enabled() && require_sync_;
  if (arm) reducer_.rebuild_buckets();
  const double start = TraceRecorder::now_us();
  Variable out = module_->forward(x);
  if (options_.trace) {
    options_.trace->span(TraceRecorder::kCompute, "forward", start, TraceRecorder::now_us());
  }
  if (arm) reducer_.prepare_for_backward({out});
  return out;
}

}  // namespace course
