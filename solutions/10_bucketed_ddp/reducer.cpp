// reducer.cpp: lesson 10, part 2: the Reducer (the algorithm is in reducer.h).
#include "reducer.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>

#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {

bool Reducer::rebuild_buckets() {
  if (!start_rebuild()) return false;  // only once, after a first full iteration
  const std::vector<int64_t> bytes = param_bytes();
  std::vector<BucketIndices> assignment;
  // BEGIN SOLUTION: assign by this rank's ready order, then adopt rank 0's (sync_bucket_indices)
  assignment = compute_bucket_assignment_by_size(
      bytes, ready_order_, {options_.first_bucket_bytes, options_.bucket_cap_bytes});
  if (world_ > 1) sync_bucket_indices(assignment);
  // END SOLUTION
  initialize_buckets(assignment);
  return true;
}

std::vector<size_t> Reducer::search_unused_parameters(const std::vector<Variable>& outputs) const {
  std::vector<size_t> unused;
  // BEGIN SOLUTION: walk the graph from the outputs; parameters it does not reach are unused
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
    if (!reached.count(params_[i].second.impl().get())) unused.push_back(i);
  }
  // END SOLUTION
  return unused;
}

void Reducer::mark_variable_ready(size_t index) {
  record_ready(index);
  // BEGIN SOLUTION: grad * grad_scale() into the slice (zeros if undefined); bucket view option
  const Variable& p = params_[index].second;
  const Tensor view = slice(index);
  const float scale = grad_scale();  // 1 / world, or 1 when a comm hook divides
  const Tensor grad = p.grad();
  if (!grad.defined()) {
    fill_(view, 0.0f);  // an unused parameter contributes nothing
  } else if (grad.shares_storage_with(view)) {
    if (scale != 1.0f) scale_(view, scale);  // already the bucket's slice (bucket view)
  } else {
    mul_out(view, grad, scale);  // scales while copying: one pass over the gradient
    if (options_.gradient_as_bucket_view) p.set_grad(view);
  }
  // END SOLUTION
  // BEGIN SOLUTION: count the bucket down; complete: log it in ready_log_, launch in order
  const size_t b = variable_locators_[index].bucket_index;
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
    if (options_.find_unused_parameters) all_reduce_local_used_map();
    finalize_backward();
  }
  // END SOLUTION
}

void Reducer::finalize_backward() {
  const double start = TraceRecorder::now_us();
  // BEGIN SOLUTION: bucket by bucket: wait for it, then its means into the grads (or views)
  for (size_t b = 0; b < buckets_.size(); ++b) {
    wait_for_bucket(b);  // the buckets after it may still be on the wire meanwhile
    for (size_t i : buckets_[b].params) {
      if (options_.find_unused_parameters && local_used_.data()[i] == 0.0f) continue;
      const Variable& p = params_[i].second;
      const Tensor view = slice(i);
      const Tensor grad = p.grad();
      if (options_.gradient_as_bucket_view) {
        if (!grad.shares_storage_with(view)) p.set_grad(view);
      } else if (grad.defined()) {
        copy_(grad, view);  // nothing to do when the bucket adopted this gradient
      } else {
        p.set_grad(view.clone());  // unused here, used on another rank
      }
    }
  }
  // END SOLUTION
  disarm_hooks(start);
}

}  // namespace course
