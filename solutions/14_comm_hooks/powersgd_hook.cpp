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
  const int64_t n = m.shape()[0];
  const int64_t r = m.shape()[1];
  // BEGIN SOLUTION: in double: each column minus its projections, twice, then unit length
  float* d = m.data();
  std::vector<double> a(d, d + n * r);
  for (int64_t j = 0; j < r; ++j) {
    double before = 0;
    for (int64_t k = 0; k < n; ++k) before += a[k * r + j] * a[k * r + j];
    for (int pass = 0; pass < 2; ++pass) {  // the second removes what rounding left
      for (int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (int64_t k = 0; k < n; ++k) dot += a[k * r + i] * a[k * r + j];
        for (int64_t k = 0; k < n; ++k) a[k * r + j] -= dot * a[k * r + i];
      }
    }
    double norm2 = 0;
    for (int64_t k = 0; k < n; ++k) norm2 += a[k * r + j] * a[k * r + j];
    const double norm = std::sqrt(norm2);
    const double inv = norm > 1e-10 * std::sqrt(before) ? 1.0 / norm : 0.0;
    for (int64_t k = 0; k < n; ++k) a[k * r + j] *= inv;
  }
  for (int64_t k = 0; k < n * r; ++k) d[k] = static_cast<float>(a[k]);
  // END SOLUTION
}

void PowerSgd::reduce_bucket(GradBucket& bucket) {
  const Tensor& buffer = bucket.buffer;
  const float inv_world = 1.0f / static_cast<float>(group_.size());
  if (iteration_ < options_.start_iter) {
    // BEGIN SOLUTION: the warm-up: the plain mean (divide, all-reduce), then end_bucket
    scale_(buffer, inv_world);
    group_.all_reduce(buffer.span(), ReduceOp::SUM);
    end_bucket(bucket, buffer.numel());
    // END SOLUTION
    return;
  }
  BucketState& state = state_for(bucket);
  const PowerSgdPlan& plan = state.plan;
  // BEGIN SOLUTION: error feedback: the buffer becomes what this rank means to send
  add_(buffer, state.error);
  // END SOLUTION

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
  // BEGIN SOLUTION: P = M Q per matrix; all-reduce the uncompressed (their mean) and the Ps
  for (size_t k = 0; k < matrices.size(); ++k) {
    gemm(matrices[k], false, state.qs[k], false, 1.0f, 0.0f, state.ps[k]);
  }
  if (flat.numel() > 0) {
    group_.all_reduce(flat.span(), ReduceOp::SUM);
    scale_(flat, inv_world);
  }
  if (state.p_flat.numel() > 0) group_.all_reduce(state.p_flat.span(), ReduceOp::SUM);
  // END SOLUTION
  // BEGIN SOLUTION: uncompressed: error = meant - mean, then the mean into the bucket
  at = 0;
  for (size_t j : plan.uncompressed) {
    const int64_t numel = shape_numel(bucket.shapes[j]);
    const Tensor slice = buffer.rows(bucket.offsets[j], numel);
    const Tensor error = state.error.rows(bucket.offsets[j], numel);
    copy_(error, slice);
    add_(error, flat.rows(at, numel), -1.0f);
    copy_(slice, flat.rows(at, numel));
    at += numel;
  }
  // END SOLUTION
  // BEGIN SOLUTION: orthogonalise each P; Q = M^T P; all-reduce the Qs and divide by N
  for (const Tensor& p : state.ps) orthogonalize(p);
  for (size_t k = 0; k < matrices.size(); ++k) {
    gemm(matrices[k], true, state.ps[k], false, 1.0f, 0.0f, state.qs[k]);
  }
  if (state.q_flat.numel() > 0) {
    group_.all_reduce(state.q_flat.span(), ReduceOp::SUM);
    scale_(state.q_flat, inv_world);
  }
  // END SOLUTION
  // BEGIN SOLUTION: matrices: error = M - P Q^T, M = P Q^T into the bucket (write_low_rank)
  for (size_t k = 0; k < matrices.size(); ++k) {
    write_low_rank(matrices[k], state.ps[k], state.qs[k], errors[k]);
  }
  // END SOLUTION
  end_bucket(bucket, plan.sent_elements());
}

}  // namespace course
