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
  [[maybe_unused]] const std::vector<int64_t> bytes = param_bytes();
  std::vector<BucketIndices> assignment;
  // TODO(lesson10): assign by this rank's ready order, then adopt rank 0's (sync_bucket_indices)
  COURSE_TODO();
  initialize_buckets(assignment);
  return true;
}

std::vector<size_t> Reducer::search_unused_parameters(const std::vector<Variable>& outputs) const {
  std::vector<size_t> unused;
  // TODO(lesson10): walk the graph from the outputs; parameters it does not reach are unused
  COURSE_TODO();
  return unused;
}

void Reducer::mark_variable_ready(size_t index) {
  record_ready(index);
  // TODO(lesson10): grad * grad_scale() into the slice (zeros if undefined); bucket view option
  COURSE_TODO();
  // TODO(lesson10): count the bucket down; complete: log it in ready_log_, launch in order
  COURSE_TODO();
}

void Reducer::launch_ready_buckets() {
  // TODO(lesson10): launch complete buckets in order; after the last, used map and finalize
  COURSE_TODO();
}

void Reducer::finalize_backward() {
  const double start = TraceRecorder::now_us();
  // TODO(lesson10): bucket by bucket: wait for it, then its means into the grads (or views)
  COURSE_TODO();
  disarm_hooks(start);
}

}  // namespace course
