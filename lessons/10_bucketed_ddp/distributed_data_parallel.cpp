// distributed_data_parallel.cpp: lesson 10, the DDP wrapper (see the header). Given code.
#include "distributed_data_parallel.h"

#include <utility>

#include "bench_table.h"
#include "model_check.h"

namespace course {

namespace {

// Construction's collective part, before the Reducer is built from the parameters.
std::vector<std::pair<std::string, Variable>> synced_parameters(Module& module,
                                                                ProcessGroup& group) {
  verify_same_parameters(module, group);
  broadcast_parameters(module, group);
  return module.named_parameters();
}

}  // namespace

void broadcast_parameters(Module& module, ProcessGroup& group) {
  if (group.size() == 1) return;
  for (const Variable& p : module.parameters()) group.broadcast(p.data().device_span(), 0);
  broadcast_buffers(module, group);
}

void broadcast_buffers(Module& module, ProcessGroup& group) {
  if (group.size() == 1) return;
  for (auto& [name, buffer] : module.named_buffers()) group.broadcast(buffer.span(), 0);
}

DistributedDataParallel::DistributedDataParallel(Module& module, ProcessGroup& group,
                                                 ReducerOptions options)
    : module_(module),
      options_(options),
      reducer_(synced_parameters(module, group), group, options) {}

Variable DistributedDataParallel::forward(const Variable& x) {
  const bool arm = grad_mode_enabled() && require_sync_;
  if (arm) reducer_.rebuild_buckets();
  const double start = TraceRecorder::now_us();
  Variable out = module_.forward(x);
  if (options_.trace) {
    options_.trace->span(TraceRecorder::kCompute, "forward", start, TraceRecorder::now_us());
  }
  if (arm) reducer_.prepare_for_backward({out});
  return out;
}

void DistributedDataParallel::prepare_for_backward() {
  if (!require_sync_ || reducer_.reduction_pending()) return;  // no_sync, or forward() armed it
  reducer_.rebuild_buckets();
  reducer_.prepare_for_backward({});
}

void DistributedDataParallel::finish_backward() {
  if (require_sync_) reducer_.ensure_prior_reduction_finished();
}

int64_t DistributedDataParallel::messages_per_step() const {
  return static_cast<int64_t>(reducer_.buckets().size()) +
         (options_.find_unused_parameters ? 1 : 0);
}

std::optional<InBackwardSync> DistributedDataParallel::in_backward_sync() const {
  if (!require_sync_) return InBackwardSync{};  // no_sync: that backward sent nothing
  const ReducerStepTimes& t = reducer_.last_step_times();
  return InBackwardSync{t.hooks, t.wait, t.copy_back};
}

std::string DistributedDataParallel::describe() const {
  return "bucketed DDP (the Reducer): " + std::to_string(reducer_.buckets().size()) +
         " bucket(s), first " + format_bytes(options_.first_bucket_bytes) + ", cap " +
         format_bytes(options_.bucket_cap_bytes) +
         (options_.find_unused_parameters ? ", find_unused_parameters" : "") +
         (options_.gradient_as_bucket_view ? ", gradient_as_bucket_view" : "");
}

}  // namespace course
