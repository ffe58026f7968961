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
  // Only once, only after an iteration in which every parameter became ready, and not
  // with find_unused_parameters (its order can change from one iteration to the next).
  if (has_rebuilt_ || options_.find_unused_parameters || ready_order_.size() != params_.size() ||
      require_finalize_) {
    return false;
  }
  has_rebuilt_ = true;
  wait_in_flight();  // the old buffers go away
  [[maybe_unused]] const std::vector<int64_t> bytes = param_bytes();
  std::vector<BucketIndices> assignment;
  // TODO(lesson10): assign by this rank's ready order, then adopt rank 0's layout (broadcast)
  COURSE_TODO();
  initialize_buckets(assignment);
  return true;
}

void Reducer::prepare_for_backward(const std::vector<Variable>& outputs) {
  ensure_prior_reduction_finished();
  reset_iteration();
  if (options_.find_unused_parameters) {
    local_used_ = Tensor::zeros({static_cast<int64_t>(params_.size())});
    // TODO(lesson10): walk the graph from the outputs; unreached parameters are unused
    COURSE_TODO();
  }
  expect_hooks_ = true;
  require_finalize_ = true;
  last_trace_us_ = 0;  // trace_hook starts from the backward's beginning
}

void Reducer::mark_variable_ready(size_t index) {
  record_ready(index);
  // TODO(lesson10): grad / world into the slice (zeros if undefined); bucket view option
  COURSE_TODO();
  // TODO(lesson10): count the bucket down; when complete, launch ready buckets in order
  COURSE_TODO();
}

void Reducer::launch_ready_buckets() {
  // TODO(lesson10): launch complete buckets in order; after the last, used map and finalize
  COURSE_TODO();
}

void Reducer::finalize_backward() {
  const double start = TraceRecorder::now_us();
  wait_for_reductions();
  // TODO(lesson10): copy each slice back into its grad (or the view); skip globally unused
  COURSE_TODO();
  expect_hooks_ = false;
  require_finalize_ = false;
  if (options_.trace) {
    options_.trace->span(TraceRecorder::kCompute, "wait for all-reduces", start,
                         TraceRecorder::now_us(), std::to_string(buckets_.size()) + " buckets");
  }
}

}  // namespace course
