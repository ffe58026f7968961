// reducer.cpp: lesson 10, part 2: the Reducer (the algorithm is in reducer.h).
#include "reducer.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>

#include "error.h"
#include "node.h"
#include "tensor_ops.h"
#include "work.h"

namespace course {

namespace {

int64_t float_bytes(const Variable& v) {
  return v.numel() * static_cast<int64_t>(sizeof(float));
}

// "backward 4" for "4.weight": the layer a parameter belongs to, for the trace.
std::string layer_of(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

}  // namespace

Reducer::Reducer(std::vector<std::pair<std::string, Variable>> params, ProcessGroup& group,
                 ReducerOptions options)
    : params_(std::move(params)), group_(group), options_(options), world_(group.size()) {
  if (params_.empty()) throw ConfigError("Reducer: the model has no parameters to reduce");
  for (const auto& [name, p] : params_) {
    if (!p.is_leaf() || !p.requires_grad()) {
      throw ConfigError("Reducer: parameter \"" + name +
                        "\" is not a leaf that requires grad; pass the model's parameters");
    }
  }
  std::vector<int64_t> bytes;
  for (const auto& entry : params_) bytes.push_back(float_bytes(entry.second));
  initialize_buckets(
      compute_bucket_assignment_by_size(bytes, reverse_order(params_.size()),
                                        {options_.first_bucket_bytes, options_.bucket_cap_bytes}));
  ready_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    hook_ids_.push_back(params_[i].second.register_post_accumulate_grad_hook(
        [this, i](const Variable&) { autograd_hook(i); }));
  }
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
  locator_.assign(params_.size(), {0, 0});
  for (const BucketIndices& indices : assignment) {
    Bucket bucket;
    bucket.params = indices;
    int64_t offset = 0;
    for (size_t position = 0; position < indices.size(); ++position) {
      locator_[indices[position]] = {buckets_.size(), position};
      bucket.offsets.push_back(offset);
      offset += params_[indices[position]].second.numel();
    }
    bucket.flat = Tensor::zeros({offset}, params_[0].second.device());
    buckets_.push_back(std::move(bucket));
  }
}

Tensor Reducer::slice(size_t index) const {
  const auto [b, position] = locator_[index];
  const Bucket& bucket = buckets_[b];
  const Variable& p = params_[index].second;
  return bucket.flat.rows(bucket.offsets[position], p.numel()).reshape(p.shape());
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

bool Reducer::rebuild_buckets() {
  // Only once, only after an iteration in which every parameter became ready, and not
  // with find_unused_parameters (its order can change from one iteration to the next).
  if (has_rebuilt_ || options_.find_unused_parameters || ready_order_.size() != params_.size() ||
      require_finalize_) {
    return false;
  }
  has_rebuilt_ = true;
  wait_in_flight();  // the old buffers go away
  std::vector<int64_t> bytes;
  for (const auto& entry : params_) bytes.push_back(float_bytes(entry.second));
  std::vector<BucketIndices> assignment;
  // BEGIN SOLUTION: assign by this rank's ready order, then adopt rank 0's layout (broadcast)
  assignment = compute_bucket_assignment_by_size(
      bytes, ready_order_, {options_.first_bucket_bytes, options_.bucket_cap_bytes});
  if (world_ > 1) {
    // Layout: [bucket count, size of each bucket..., parameter indices in bucket order...],
    // padded to 2P + 1 floats (at most P buckets). Indices below 2^24 are exact in float.
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
  // END SOLUTION
  initialize_buckets(assignment);
  return true;
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

void Reducer::prepare_for_backward(const std::vector<Variable>& outputs) {
  ensure_prior_reduction_finished();
  next_bucket_ = 0;
  for (Bucket& bucket : buckets_) {
    bucket.pending = bucket.params.size();
    bucket.work.reset();
  }
  ready_.assign(params_.size(), false);
  ready_log_.clear();
  launch_log_.clear();
  unused_.clear();
  unused_marked_ = false;
  if (options_.find_unused_parameters) {
    local_used_ = Tensor::zeros({static_cast<int64_t>(params_.size())});
    // BEGIN SOLUTION: walk the graph from the outputs; unreached parameters are unused
    std::unordered_set<const VariableImpl*> reached;
    std::unordered_set<const Node*> seen;
    std::vector<std::shared_ptr<Node>> stack;
    for (const Variable& out : outputs) {
      if (out.defined() && out.grad_fn()) stack.push_back(out.grad_fn());
      if (out.defined() && out.is_leaf()) reached.insert(out.impl().get());
    }
    while (!stack.empty()) {
      std::shared_ptr<Node> node = stack.back();
      stack.pop_back();
      if (!seen.insert(node.get()).second) continue;
      if (auto* acc = dynamic_cast<AccumulateGrad*>(node.get())) {
        reached.insert(acc->variable().impl().get());
      }
      for (const auto& next : node->next_functions()) {
        if (next) stack.push_back(next);
      }
    }
    for (size_t i = 0; i < params_.size() && !outputs.empty(); ++i) {
      if (!reached.count(params_[i].second.impl().get())) unused_.push_back(i);
    }
    // END SOLUTION
  }
  expect_hooks_ = true;
  require_finalize_ = true;
  last_trace_us_ = 0;  // trace_hook starts from the backward's beginning
}

void Reducer::autograd_hook(size_t index) {
  if (!expect_hooks_) return;  // no_sync, or evaluation: gradients just accumulate
  const double start = options_.trace ? TraceRecorder::now_us() : 0;
  if (options_.find_unused_parameters) {
    local_used_.data()[index] = 1.0f;
    if (!unused_marked_) {
      unused_marked_ = true;
      for (size_t u : unused_) mark_variable_ready(u);
    }
  }
  mark_variable_ready(index);
  if (options_.trace) trace_hook(index, start);
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
  const auto [b, position] = locator_[index];
  trace.span(TraceRecorder::kCompute, "hook " + params_[index].first, start_us, end,
             "into bucket " + std::to_string(b));
  last_trace_us_ = end;
}

void Reducer::mark_variable_ready(size_t index) {
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
  // BEGIN SOLUTION: grad / world into the slice (zeros if undefined); bucket view option
  const Variable& p = params_[index].second;
  const Tensor view = slice(index);
  const float inv_world = 1.0f / static_cast<float>(world_);
  const Tensor grad = p.grad();
  if (!grad.defined()) {
    fill_(view, 0.0f);  // an unused parameter contributes nothing
  } else if (grad.shares_storage_with(view)) {
    scale_(view, inv_world);  // already the bucket's slice (gradient_as_bucket_view)
  } else {
    copy_(view, grad);
    scale_(view, inv_world);
    if (options_.gradient_as_bucket_view) p.set_grad(view);
  }
  // END SOLUTION
  // BEGIN SOLUTION: count the bucket down; when complete, launch ready buckets in order
  const size_t b = locator_[index].first;
  if (--buckets_[b].pending == 0) {
    ready_log_.push_back(b);
    launch_ready_buckets();
  }
  // END SOLUTION
}

void Reducer::launch_ready_buckets() {
  // BEGIN SOLUTION: launch complete buckets in order; after the last, used map and finalize
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    launch_bucket(next_bucket_++);
  }
  if (next_bucket_ == buckets_.size()) {
    if (options_.find_unused_parameters) {
      used_work_ = group_.all_reduce_async(local_used_.span(), ReduceOp::SUM);
    }
    finalize_backward();
  }
  // END SOLUTION
}

void Reducer::launch_bucket(size_t b) {
  Bucket& bucket = buckets_[b];
  launch_log_.push_back(b);
  bucket.launch_us = TraceRecorder::now_us();
  bucket.work = group_.all_reduce_async(bucket.flat.span(), ReduceOp::SUM);
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

void Reducer::finalize_backward() {
  const double start = TraceRecorder::now_us();
  std::vector<WorkPtr> works;
  for (Bucket& bucket : buckets_) works.push_back(bucket.work);
  works.push_back(used_work_);
  wait_all(works, options_.timeout);
  for (Bucket& bucket : buckets_) bucket.work.reset();
  used_work_.reset();
  for (std::thread& t : watchers_) t.join();
  watchers_.clear();
  // BEGIN SOLUTION: copy each slice back into its grad (or the view); skip globally unused
  for (size_t i = 0; i < params_.size(); ++i) {
    if (options_.find_unused_parameters && local_used_.data()[i] == 0.0f) continue;
    const Variable& p = params_[i].second;
    const Tensor view = slice(i);
    const Tensor grad = p.grad();
    if (options_.gradient_as_bucket_view) {
      if (!grad.shares_storage_with(view)) p.set_grad(view);
    } else if (grad.defined()) {
      copy_(grad, view);
    } else {
      p.set_grad(view.clone());  // unused here, used on another rank
    }
  }
  // END SOLUTION
  expect_hooks_ = false;
  require_finalize_ = false;
  if (options_.trace) {
    options_.trace->span(TraceRecorder::kCompute, "wait for all-reduces", start,
                         TraceRecorder::now_us(), std::to_string(buckets_.size()) + " buckets");
  }
}

}  // namespace course
