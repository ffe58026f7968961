// powersgd_hook.cpp: lesson 14, the exercise: the orthogonalisation and PowerSGD's step
// (the algorithm is at the top of powersgd_hook.h).
#include "powersgd_hook.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "error.h"
#include "tensor_ops.h"

namespace course {

void orthogonalize(const Tensor& m) {
  [[maybe_unused]] const int64_t n = m.shape()[0];
  [[maybe_unused]] const int64_t r = m.shape()[1];
  // TODO(lesson14): in double: each column minus its projections, twice, then unit length
  COURSE_TODO();
}

void PowerSgd::reduce_bucket(GradBucket& bucket) {
  const Tensor& buffer = bucket.buffer;
  [[maybe_unused]] const float inv_world = 1.0f / static_cast<float>(group_.size());
  if (iteration_ < options_.start_iter) {
    // TODO(lesson14): the warm-up: the plain mean (divide, all-reduce), then end_bucket
    COURSE_TODO();
    return;
  }
  BucketState& state = state_for(bucket);
  const PowerSgdPlan& plan = state.plan;
  // TODO(lesson14): error feedback: the buffer becomes what this rank means to send
  COURSE_TODO();

  // The uncompressed parameters, packed into one flat buffer, are all-reduced exactly.
  Tensor flat = Tensor::empty({plan.uncompressed_elements});
  int64_t at = 0;
  for (size_t j : plan.uncompressed) {
    const int64_t numel = shape_numel(bucket.shapes[j]);
    copy_(flat.rows(at, numel), buffer.rows(bucket.offsets[j], numel));
    at += numel;
  }
  start_qs(state, bucket.index);
  std::vector<Tensor> matrices, errors;
  for (const PowerSgdMatrix& mat : plan.compressed) {
    matrices.push_back(matrix_view(buffer, bucket, mat));
    errors.push_back(matrix_view(state.error, bucket, mat));
  }
  // TODO(lesson14): P = M Q per matrix; all-reduce the uncompressed (their mean) and the Ps
  COURSE_TODO();
  // TODO(lesson14): uncompressed: error = meant - mean, then the mean into the bucket
  COURSE_TODO();
  // TODO(lesson14): orthogonalise each P; Q = M^T P; all-reduce the Qs and divide by N
  COURSE_TODO();
  // TODO(lesson14): matrices: error = M - P Q^T, M = P Q^T into the bucket (write_low_rank)
  COURSE_TODO();
  end_bucket(bucket, plan.sent_elements());
}

}  // namespace course
