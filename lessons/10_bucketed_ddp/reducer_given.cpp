// reducer_given.cpp: lesson 10, given: the Reducer's set-up (hooks, bucket buffers), the
// checks between iterations, the hooks' bookkeeping and the launch of one bucket's
// all-reduce, the layout broadcast of the rebuild (sync_bucket_indices) and the used map's
// all-reduce. The rebuild's logic, the graph walk, the readiness logic and the
// finalisation are the exercise (reducer.cpp).
#include <algorithm>
#include <memory>
#include <string>

#include "error.h"
#include "node.h"
#include "reducer.h"
#include "tensor_ops.h"
#include "work.h"

namespace course {

namespace {

// "4" for "4.weight" (the name up to its last dot): the layer, for "backward 4" spans.
std::string layer_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

}  // namespace

Reducer::Reducer(std::vector<std::pair<std::string, Variable>> params, ProcessGroup& group,
                 ReducerOptions options)
    : params_(std::move(params)),
      group_(group),
      options_(options),
      world_(group.size()),
      grad_scale_(1.0f / static_cast<float>(group.size())) {
  if (params_.empty()) throw ConfigError("Reducer: the model has no parameters to reduce");
  for (const auto& [name, p] : params_) {
    if (!p.is_leaf() || !p.requires_grad()) {
      throw ConfigError("Reducer: parameter \"" + name +
                        "\" is not a leaf that requires grad; pass the model's parameters");
    }
  }
  const std::vector<int64_t> bytes = param_bytes();
  initialize_buckets(
      compute_bucket_assignment_by_size(bytes, reverse_order(params_.size()),
                                        {options_.first_bucket_bytes, options_.bucket_cap_bytes}));
  ready_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    hook_ids_.push_back(params_[i].second.register_post_accumulate_grad_hook(
        [this, i](const Variable&) { autograd_hook(i); }));
  }
}

std::vector<int64_t> Reducer::param_bytes() const {
  std::vector<int64_t> bytes;
  for (const auto& entry : params_) {
    bytes.push_back(entry.second.numel() * static_cast<int64_t>(sizeof(float)));
  }
  return bytes;
}

Reducer::~Reducer() {
  for (size_t i = 0; i < params_.size(); ++i) params_[i].second.remove_hook(hook_ids_[i]);
  wait_in_flight();
}

void Reducer::wait_in_flight() noexcept {
  for (Bucket& bucket : buckets_) {
    if (!bucket.work) continue;
    try {
      bucket.work->wait(options_.timeout);
    } catch (...) {  // the error was (or will be) reported by whoever waited first
    }
    bucket.work.reset();
  }
  if (used_work_) {
    try {
      used_work_->wait(options_.timeout);
    } catch (...) {
    }
    used_work_.reset();
  }
  for (std::thread& t : watchers_) t.join();
  watchers_.clear();
}

void Reducer::initialize_buckets(const std::vector<BucketIndices>& assignment) {
  buckets_.clear();
  variable_locators_.assign(params_.size(), {});
  for (const BucketIndices& indices : assignment) {
    Bucket bucket;
    bucket.params = indices;
    int64_t offset = 0;
    for (size_t position = 0; position < indices.size(); ++position) {
      variable_locators_[indices[position]] = {buckets_.size(), position};
      bucket.offsets.push_back(offset);
      offset += params_[indices[position]].second.numel();
    }
    bucket.own = Tensor::zeros({offset}, params_[0].second.device());
    bucket.flat = bucket.own;
    buckets_.push_back(std::move(bucket));
  }
}

Tensor Reducer::slice(size_t index) const {
  const VariableLocator where = variable_locators_[index];
  const Bucket& bucket = buckets_[where.bucket_index];
  const Variable& p = params_[index].second;
  return bucket.flat.rows(bucket.offsets[where.intra_bucket_index], p.numel()).reshape(p.shape());
}

std::vector<BucketInfo> Reducer::buckets() const {
  std::vector<BucketInfo> out;
  for (const Bucket& bucket : buckets_) {
    out.push_back({bucket.params, bucket.flat.numel() * static_cast<int64_t>(sizeof(float))});
  }
  return out;
}

std::string Reducer::parameter_list(const std::vector<size_t>& indices) const {
  std::string names, numbers;
  for (size_t i : indices) {
    names += (names.empty() ? "" : ", ") + params_[i].first;
    numbers += (numbers.empty() ? "" : " ") + std::to_string(i);
  }
  return names + " (indices " + numbers + ")";
}

void Reducer::ensure_prior_reduction_finished() const {
  if (require_finalize_) {
    std::vector<size_t> unmarked;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (!ready_[i]) unmarked.push_back(i);
    }
    throw ConfigError(
        "Expected to have finished reduction in the prior iteration before starting a new "
        "one. This error indicates that your module has parameters that were not used in "
        "producing loss. " +
        std::string(options_.find_unused_parameters
                        ? "Since find_unused_parameters is on, not every forward output took "
                          "part in the loss: pass the outputs the loss is computed from. "
                        : "You can enable unused parameter detection with "
                          "find_unused_parameters = true (--find-unused), or make sure every "
                          "parameter takes part in the loss. ") +
        "Parameters which did not receive grad for rank " + std::to_string(group_.rank()) + ": " +
        parameter_list(unmarked));
  }
}

bool Reducer::start_rebuild() {
  if (has_rebuilt_ || options_.find_unused_parameters || ready_order_.size() != params_.size() ||
      require_finalize_) {
    return false;
  }
  has_rebuilt_ = true;
  wait_in_flight();
  return true;
}

void Reducer::reset_iteration() {
  ensure_prior_reduction_finished();
  next_bucket_ = 0;
  for (Bucket& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
    bucket.flat = bucket.own;  // an adopted gradient is the optimizer's again
  }
  ready_.assign(params_.size(), false);
  ready_log_.clear();
  launch_log_.clear();
  unused_.clear();
  unused_marked_ = false;
  times_ = {};
  if (options_.find_unused_parameters) {
    local_used_ = Tensor::zeros({static_cast<int64_t>(params_.size())});
  }
}

void Reducer::arm_hooks() {
  expect_hooks_ = true;
  require_finalize_ = true;
  last_trace_us_ = 0;  // trace_hook starts from the backward's beginning
}

void Reducer::disarm_hooks(double start_us) {
  for (std::thread& t : watchers_) t.join();
  watchers_.clear();
  expect_hooks_ = false;
  require_finalize_ = false;
  const double end_us = TraceRecorder::now_us();
  finalize_us_ = end_us - start_us;
  times_.wait += waited_us_ * 1e-6;
  times_.copy_back = std::max(0.0, (finalize_us_ - waited_us_) * 1e-6);
  times_.launched =
      static_cast<int>(launch_log_.size()) + (options_.find_unused_parameters ? 1 : 0);
  if (options_.trace) {
    options_.trace->span(TraceRecorder::kCompute, "wait for all-reduces", start_us, end_us,
                         std::to_string(buckets_.size()) + " buckets");
  }
}

void Reducer::prepare_for_backward(const std::vector<Variable>& outputs) {
  reset_iteration();
  if (options_.find_unused_parameters) unused_ = search_unused_parameters(outputs);
  arm_hooks();
}

void Reducer::sync_bucket_indices(std::vector<BucketIndices>& assignment) {
  const size_t n = params_.size();
  std::vector<float> layout(2 * n + 1, 0.0f);
  layout[0] = static_cast<float>(assignment.size());
  size_t at = 1 + assignment.size();
  for (size_t b = 0; b < assignment.size(); ++b) {
    layout[1 + b] = static_cast<float>(assignment[b].size());
    for (size_t index : assignment[b]) layout[at++] = static_cast<float>(index);
  }
  group_.broadcast(layout, 0);
  assignment.assign(static_cast<size_t>(layout[0]), {});
  at = 1 + assignment.size();
  for (size_t b = 0; b < assignment.size(); ++b) {
    for (size_t k = 0; k < static_cast<size_t>(layout[1 + b]); ++k) {
      assignment[b].push_back(static_cast<size_t>(layout[at++]));
    }
  }
}

void Reducer::all_reduce_local_used_map() {
  used_work_ = group_.all_reduce_async(local_used_.span(), ReduceOp::SUM);
}

void Reducer::record_ready(size_t index) {
  if (ready_[index]) {
    throw ConfigError(
        "Expected to mark a variable ready only once. Parameter \"" + params_[index].first +
        "\" (index " + std::to_string(index) + ") on rank " + std::to_string(group_.rank()) +
        " got its gradient twice in one iteration: it was used in a second backward before "
        "the reduction finished, or outside forward. Run one backward per forward "
        "(use no_sync to accumulate over several).");
  }
  ready_[index] = true;
  if (!has_rebuilt_) ready_order_.push_back(index);
}

void Reducer::wait_for_bucket(size_t b) {
  const double start_us = TraceRecorder::now_us();
  if (b == 0) waited_us_ = 0;
  Bucket& bucket = buckets_[b];
  if (bucket.work) bucket.work->wait(options_.timeout);
  bucket.work.reset();
  if (used_work_) {  // launched after the last bucket: it finishes after every bucket
    used_work_->wait(options_.timeout);
    used_work_.reset();
  }
  waited_us_ += TraceRecorder::now_us() - start_us;
}

void Reducer::autograd_hook(size_t index) {
  if (!expect_hooks_) return;  // no_sync, or evaluation: gradients just accumulate
  const double start = TraceRecorder::now_us();
  finalize_us_ = 0;
  if (options_.find_unused_parameters) {
    local_used_.data()[index] = 1.0f;
    if (!unused_marked_) {
      unused_marked_ = true;
      for (size_t u : unused_) mark_variable_ready(u);
    }
  }
  adopt_gradient(index);
  mark_variable_ready(index);
  times_.hooks += (TraceRecorder::now_us() - start - finalize_us_) * 1e-6;
  if (!require_finalize_) last_times_ = times_;  // the last hook finalized the iteration
  if (options_.trace) trace_hook(index, start);
}

void Reducer::adopt_gradient(size_t index) {
  Bucket& bucket = buckets_[variable_locators_[index].bucket_index];
  const Tensor grad = params_[index].second.grad();
  if (bucket.params.size() != 1 || !grad.defined() || grad.device() != bucket.own.device()) {
    return;
  }
  bucket.flat = grad.reshape({grad.numel()});
}

void Reducer::trace_hook(size_t index, double start_us) {
  TraceRecorder& trace = *options_.trace;
  if (last_trace_us_ == 0) last_trace_us_ = trace.backward_begin_us();
  // Consecutive hooks of one layer leave a gap of microseconds: not worth a span.
  if (last_trace_us_ > 0 && start_us - last_trace_us_ > 5.0) {
    trace.span(TraceRecorder::kCompute, "backward " + layer_of(params_[index].first),
               last_trace_us_, start_us);
  }
  const double end = TraceRecorder::now_us();
  trace.span(TraceRecorder::kCompute, "hook " + params_[index].first, start_us, end,
             "into bucket " + std::to_string(variable_locators_[index].bucket_index));
  last_trace_us_ = end;
}

void Reducer::register_comm_hook(CommHook hook) {
  const std::string who = "rank " + std::to_string(group_.rank()) + ": register_comm_hook: ";
  if (!hook) throw ConfigError(who + "the hook is empty");
  if (comm_hook_) throw ConfigError(who + "a communication hook can only be registered once");
  if (expect_hooks_ || require_finalize_ || has_rebuilt_ || !ready_order_.empty()) {
    throw ConfigError(who +
                      "register the hook before the first backward (the buckets of "
                      "earlier iterations were averaged without it)");
  }
  comm_hook_ = std::move(hook);
  grad_scale_ = 1.0f;  // the hook divides
}

void Reducer::launch_bucket(size_t b) {
  Bucket& bucket = buckets_[b];
  launch_log_.push_back(b);
  bucket.launch_us = TraceRecorder::now_us();
  if (comm_hook_) {
    GradBucket view;
    view.index = b;
    view.is_last = b + 1 == buckets_.size();
    view.buffer = bucket.flat;
    view.params = bucket.params;
    view.offsets = bucket.offsets;
    for (size_t i : bucket.params) view.shapes.push_back(params_[i].second.shape());
    bucket.work = comm_hook_(view);
    if (!bucket.work) {
      throw ConfigError("rank " + std::to_string(group_.rank()) +
                        ": the communication hook returned no Work for bucket " +
                        std::to_string(b));
    }
  } else {
    bucket.work = group_.all_reduce_async(bucket.flat.device_span(), ReduceOp::SUM);
  }
  if (options_.trace) {
    // A watcher records when the all-reduce really finished (the final wait only sees
    // when it was waited for).
    TraceRecorder* trace = options_.trace;
    WorkPtr work = bucket.work;
    const double start = bucket.launch_us;
    const std::string detail = std::to_string(bucket.params.size()) + " parameters, " +
                               std::to_string(bucket.flat.numel() * 4) + " bytes";
    const Millis timeout = options_.timeout;
    watchers_.emplace_back([trace, work, start, b, detail, timeout] {
      try {
        work->wait(timeout);
      } catch (...) {  // reported by the final wait
      }
      trace->span(TraceRecorder::kComm, "all_reduce bucket " + std::to_string(b), start,
                  TraceRecorder::now_us(), detail);
    });
  }
}

}  // namespace course
