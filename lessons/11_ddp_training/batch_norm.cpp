// batch_norm.cpp: lesson 11, BatchNorm1d and the statistics SyncBatchNorm shares (given;
// see batch_norm.h). Sums are accumulated in double, as torch accumulates in acc_type.
#include "batch_norm.h"

#include <cmath>

#include "error.h"

namespace course {
namespace {

void check_rows(const Tensor& t, int64_t channels, const char* what) {
  if (t.dim() != 2 || t.size(1) != channels) {
    throw ConfigError(std::string("batch norm: ") + what + " must be [B, " +
                      std::to_string(channels) + "], got " + shape_str(t.shape()));
  }
}

}  // namespace

BatchNormStats batch_norm_stats(const Tensor& x, float eps) {
  const int64_t n = x.size(0), c = x.size(1);
  const std::vector<float> v = x.to_vector();
  BatchNormStats s;
  s.count = n;
  s.mean.assign(static_cast<size_t>(c), 0.0f);
  s.invstd.assign(static_cast<size_t>(c), 0.0f);
  if (n == 0) return s;
  for (int64_t j = 0; j < c; ++j) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += v[static_cast<size_t>(i * c + j)];
    const double mean = sum / static_cast<double>(n);
    double m2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = v[static_cast<size_t>(i * c + j)] - mean;
      m2 += d * d;
    }
    s.mean[static_cast<size_t>(j)] = static_cast<float>(mean);
    s.invstd[static_cast<size_t>(j)] =
        static_cast<float>(1.0 / std::sqrt(m2 / static_cast<double>(n) + eps));
  }
  return s;
}

Tensor batch_norm_elemt(const Tensor& x, const BatchNormStats& stats, const Tensor& weight,
                        const Tensor& bias) {
  const int64_t n = x.size(0), c = x.size(1);
  const std::vector<float> v = x.to_vector(), w = weight.to_vector(), b = bias.to_vector();
  std::vector<float> y(v.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const size_t k = static_cast<size_t>(i * c + j), cj = static_cast<size_t>(j);
      y[k] = (v[k] - stats.mean[cj]) * stats.invstd[cj] * w[cj] + b[cj];
    }
  }
  return Tensor::from_vector({n, c}, y, x.device());
}

void batch_norm_update_running(const BatchNormStats& stats, float eps, float momentum,
                               Tensor& running_mean, Tensor& running_var,
                               Tensor& num_batches_tracked) {
  if (stats.count < 2) return;
  float* rm = running_mean.data();
  float* rv = running_var.data();
  const double n = static_cast<double>(stats.count);
  for (size_t j = 0; j < stats.mean.size(); ++j) {
    const double istd = stats.invstd[j];
    const double var = 1.0 / (istd * istd) - eps;  // the biased variance, back from invstd
    rm[j] = static_cast<float>((1.0 - momentum) * rm[j] + momentum * stats.mean[j]);
    rv[j] = static_cast<float>((1.0 - momentum) * rv[j] + momentum * var * n / (n - 1));
  }
  num_batches_tracked.data()[0] += 1.0f;
}

BatchNormGradSums batch_norm_backward_reduce(const Tensor& dy, const Tensor& x,
                                             const BatchNormStats& stats) {
  const int64_t n = x.size(0), c = x.size(1);
  const std::vector<float> g = dy.to_vector(), v = x.to_vector();
  std::vector<double> sdy(static_cast<size_t>(c), 0.0), sdyx(static_cast<size_t>(c), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      const size_t k = static_cast<size_t>(i * c + j), cj = static_cast<size_t>(j);
      sdy[cj] += g[k];
      sdyx[cj] += static_cast<double>(g[k]) * (v[k] - stats.mean[cj]);
    }
  }
  BatchNormGradSums s;
  s.sum_dy.assign(sdy.begin(), sdy.end());
  s.sum_dy_xmu.assign(sdyx.begin(), sdyx.end());
  return s;
}

Tensor batch_norm_backward_elemt(const Tensor& dy, const Tensor& x, const BatchNormStats& stats,
                                 const Tensor& weight, const BatchNormGradSums& sums) {
  const int64_t n = x.size(0), c = x.size(1);
  const std::vector<float> g = dy.to_vector(), v = x.to_vector(), w = weight.to_vector();
  std::vector<float> dx(v.size());
  const double count = static_cast<double>(std::max<int64_t>(stats.count, 1));
  for (int64_t j = 0; j < c; ++j) {
    const size_t cj = static_cast<size_t>(j);
    const double istd = stats.invstd[cj];
    const double mean_dy = sums.sum_dy[cj] / count;
    const double proj = sums.sum_dy_xmu[cj] * istd * istd / count;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i * c + j);
      dx[k] = static_cast<float>(w[cj] * istd * (g[k] - mean_dy - (v[k] - stats.mean[cj]) * proj));
    }
  }
  return Tensor::from_vector({n, c}, dx, x.device());
}

std::vector<Tensor> BatchNormBackward::apply(const Tensor& grad_output) {
  const BatchNormGradSums sums = batch_norm_backward_reduce(grad_output, x, stats);
  std::vector<Tensor> grads(3);
  if (needs_input_grad(0)) {
    if (batch_statistics) {
      grads[0] = batch_norm_backward_elemt(grad_output, x, stats, weight, sums);
    } else {  // evaluation: mean and invstd are constants, dx = dy * weight * invstd
      BatchNormGradSums none{std::vector<float>(sums.sum_dy.size(), 0.0f),
                             std::vector<float>(sums.sum_dy.size(), 0.0f)};
      grads[0] = batch_norm_backward_elemt(grad_output, x, stats, weight, none);
    }
  }
  const int64_t c = weight.numel();
  std::vector<float> dw(static_cast<size_t>(c));
  for (size_t j = 0; j < dw.size(); ++j) dw[j] = sums.sum_dy_xmu[j] * stats.invstd[j];
  if (needs_input_grad(1)) grads[1] = Tensor::from_vector({c}, dw, weight.device());
  if (needs_input_grad(2)) grads[2] = Tensor::from_vector({c}, sums.sum_dy, weight.device());
  return grads;
}

BatchNorm1d::BatchNorm1d(int64_t num_features, float eps, float momentum)
    : num_features_(num_features), eps_(eps), momentum_(momentum) {
  if (num_features < 1 || !(eps > 0) || !(momentum >= 0 && momentum <= 1)) {
    throw ConfigError("BatchNorm1d(" + std::to_string(num_features) + ", eps " +
                      std::to_string(eps) + ", momentum " + std::to_string(momentum) +
                      "): needs num_features >= 1, eps > 0 and momentum in [0, 1]");
  }
  weight_ = register_parameter("weight", Tensor::full({num_features}, 1.0f));
  bias_ = register_parameter("bias", Tensor::zeros({num_features}));
  running_mean_ = Tensor::zeros({num_features});
  running_var_ = Tensor::full({num_features}, 1.0f);
  num_batches_tracked_ = Tensor::zeros({1});
  register_buffer("running_mean", running_mean_);
  register_buffer("running_var", running_var_);
  register_buffer("num_batches_tracked", num_batches_tracked_);
}

void BatchNorm1d::check_input(const Variable& x) const {
  check_rows(x.data(), num_features_, "the input");
}

Variable BatchNorm1d::forward_eval(const Variable& x) {
  BatchNormStats running;
  running.count = x.size(0);
  running.mean = running_mean_.to_vector();
  for (float v : running_var_.to_vector()) running.invstd.push_back(1.0f / std::sqrt(v + eps_));
  Variable out(batch_norm_elemt(x.data(), running, weight_.data(), bias_.data()));
  if (auto node = record<BatchNormBackward>(out, {x, weight_, bias_})) {
    node->x = x.data();
    node->weight = weight_.data();
    node->stats = running;
    node->batch_statistics = false;
  }
  return out;
}

Variable BatchNorm1d::forward(const Variable& x) {
  check_input(x);
  if (!training_) return forward_eval(x);
  if (x.size(0) < 2) {
    throw ConfigError(
        "BatchNorm1d: expected more than 1 value per channel when training, got "
        "input " +
        shape_str(x.shape()));
  }
  const BatchNormStats stats = batch_norm_stats(x.data(), eps_);
  batch_norm_update_running(stats, eps_, momentum_, running_mean_, running_var_,
                            num_batches_tracked_);
  Variable out(batch_norm_elemt(x.data(), stats, weight_.data(), bias_.data()));
  if (auto node = record<BatchNormBackward>(out, {x, weight_, bias_})) {
    node->x = x.data();
    node->weight = weight_.data();
    node->stats = stats;
  }
  return out;
}

std::string BatchNorm1d::describe() const {
  return "BatchNorm1d(" + std::to_string(num_features_) + ", eps=" + std::to_string(eps_) +
         ", momentum=" + std::to_string(momentum_) + ")";
}

}  // namespace course
