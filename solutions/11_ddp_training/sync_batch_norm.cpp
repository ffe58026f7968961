// sync_batch_norm.cpp: lesson 11, SyncBatchNorm (see sync_batch_norm.h).
#include "sync_batch_norm.h"

#include <cmath>

#include "error.h"

namespace course {

BatchNormStats sync_batch_norm_gather_stats(const std::vector<float>& gathered, int64_t channels,
                                            float eps) {
  BatchNormStats global = empty_gathered_stats(gathered, channels);
  // BEGIN SOLUTION: count, mean, var = sum n_r (var_r + (mean_r - mean)^2) / n (header, step 3)
  const size_t c = static_cast<size_t>(channels), block = 2 * c + 1;
  const size_t world = gathered.size() / block;
  double n = 0;
  for (size_t r = 0; r < world; ++r) n += gathered[r * block + 2 * c];
  global.count = static_cast<int64_t>(n);
  if (global.count == 0) return global;
  for (size_t j = 0; j < c; ++j) {
    double mean = 0;
    for (size_t r = 0; r < world; ++r) {
      mean += static_cast<double>(gathered[r * block + 2 * c]) * gathered[r * block + j];
    }
    mean /= n;
    double m2 = 0;
    for (size_t r = 0; r < world; ++r) {
      const double n_r = gathered[r * block + 2 * c];
      if (n_r == 0) continue;
      const double istd = gathered[r * block + c + j];
      const double var_r = 1.0 / (istd * istd) - eps;
      const double d = gathered[r * block + j] - mean;
      m2 += n_r * (var_r + d * d);
    }
    global.mean[j] = static_cast<float>(mean);
    global.invstd[j] = static_cast<float>(1.0 / std::sqrt(m2 / n + eps));
  }
  // END SOLUTION
  return global;
}

std::vector<Tensor> SyncBatchNormBackward::apply(const Tensor& grad_output) {
  std::vector<Tensor> grads(3);
  // BEGIN SOLUTION: local sums, one all-reduce of 2C floats, dx; dweight, dbias (header, BACKWARD)
  const size_t c = stats.mean.size();
  const BatchNormGradSums local = batch_norm_backward_reduce(grad_output, x, stats);
  std::vector<float> message(local.sum_dy);
  message.insert(message.end(), local.sum_dy_xmu.begin(), local.sum_dy_xmu.end());
  group->all_reduce(message, ReduceOp::SUM);
  BatchNormGradSums global;
  global.sum_dy.assign(message.begin(), message.begin() + static_cast<std::ptrdiff_t>(c));
  global.sum_dy_xmu.assign(message.begin() + static_cast<std::ptrdiff_t>(c), message.end());
  if (needs_input_grad(0))
    grads[0] = batch_norm_backward_elemt(grad_output, x, stats, weight, global);
  std::vector<float> dweight(c);
  for (size_t j = 0; j < c; ++j) dweight[j] = local.sum_dy_xmu[j] * stats.invstd[j];
  if (needs_input_grad(1)) grads[1] = Tensor::from_vector({static_cast<int64_t>(c)}, dweight);
  if (needs_input_grad(2)) {
    grads[2] = Tensor::from_vector({static_cast<int64_t>(c)}, local.sum_dy);
  }
  // END SOLUTION
  return grads;
}

}  // namespace course
