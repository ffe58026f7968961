// tensor_ops.cpp: see tensor_ops.h. Argument checks, output allocation, then one call into
// the device's kernels; no arithmetic happens here.
#include "tensor_ops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "clock.h"
#include "error.h"

namespace course {
namespace {

void check_defined(const char* op, const Tensor& t) {
  if (!t.defined()) throw ConfigError(std::string(op) + ": an argument is an undefined tensor");
}

Device common_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  if (a.device() != b.device()) {
    throw ConfigError(std::string(op) + ": arguments on " + device_name(a.device()) + " and " +
                      device_name(b.device()) + "; move one with to()");
  }
  return a.device();
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    throw ConfigError(std::string(op) + ": shapes " + shape_str(a.shape()) + " and " +
                      shape_str(b.shape()) + " differ");
  }
}

void check_dim(const char* op, const Tensor& t, int64_t dim) {
  check_defined(op, t);
  if (t.dim() != dim) {
    throw ConfigError(std::string(op) + ": expected a " + std::to_string(dim) +
                      "-D tensor, got shape " + shape_str(t.shape()));
  }
}

Tensor binary_op(const char* op, BinaryOp kind, const Tensor& a, const Tensor& b) {
  const Device d = common_device(op, a, b);
  check_same_shape(op, a, b);
  Tensor out = Tensor::empty(a.shape(), d);
  kernels_for(d).binary(kind, a.raw(), b.raw(), out.raw(), a.numel());
  return out;
}

Tensor unary_op(const char* op, UnaryOp kind, const Tensor& x, float scalar = 0.0f) {
  check_defined(op, x);
  Tensor out = Tensor::empty(x.shape(), x.device());
  kernels_for(x.device()).unary(kind, x.raw(), scalar, out.raw(), x.numel());
  return out;
}

// The last dimension of x and the number of rows before it.
struct RowsCols {
  int64_t rows;
  int64_t cols;
};
RowsCols rows_cols(const char* op, const Tensor& x) {
  check_defined(op, x);
  if (x.dim() < 1) {
    throw ConfigError(std::string(op) + ": needs at least one dimension, got a scalar");
  }
  const int64_t cols = x.size(-1);
  return {cols == 0 ? 0 : x.numel() / cols, cols};
}

}  // namespace

MatmulStats& thread_matmul_stats() {
  thread_local MatmulStats stats;
  return stats;
}

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, float alpha, float beta,
          const Tensor& c) {
  const Device d = common_device("gemm", a, b);
  check_dim("gemm", a, 2);
  check_dim("gemm", b, 2);
  check_dim("gemm", c, 2);
  const int64_t m = trans_a ? a.size(1) : a.size(0);
  const int64_t k = trans_a ? a.size(0) : a.size(1);
  const int64_t kb = trans_b ? b.size(1) : b.size(0);
  const int64_t n = trans_b ? b.size(0) : b.size(1);
  if (k != kb || c.size(0) != m || c.size(1) != n || c.device() != d) {
    throw ConfigError("gemm: op(a) " + shape_str({m, k}) + " times op(b) " + shape_str({kb, n}) +
                      " into c " + shape_str(c.shape()) + " does not fit");
  }
  const auto start = std::chrono::steady_clock::now();
  kernels_for(d).gemm(trans_a, trans_b, m, n, k, alpha, a.raw(), b.raw(), beta, c.raw());
  MatmulStats& stats = thread_matmul_stats();
  stats.seconds += seconds_since(start);
  stats.calls += 1;
  stats.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  check_dim("matmul", a, 2);
  check_dim("matmul", b, 2);
  const int64_t m = trans_a ? a.size(1) : a.size(0);
  const int64_t n = trans_b ? b.size(0) : b.size(1);
  Tensor c = Tensor::empty({m, n}, a.device());
  gemm(a, trans_a, b, trans_b, 1.0f, 0.0f, c);
  return c;
}

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op("add", BinaryOp::add, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op("sub", BinaryOp::sub, a, b);
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op("mul", BinaryOp::mul, a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_op("div", BinaryOp::div, a, b);
}
Tensor neg(const Tensor& x) {
  return unary_op("neg", UnaryOp::neg, x);
}
Tensor exp(const Tensor& x) {
  return unary_op("exp", UnaryOp::exp, x);
}
Tensor log(const Tensor& x) {
  return unary_op("log", UnaryOp::log, x);
}
Tensor sqrt(const Tensor& x) {
  return unary_op("sqrt", UnaryOp::sqrt, x);
}
Tensor scale(const Tensor& x, float s) {
  return unary_op("scale", UnaryOp::scale, x, s);
}
Tensor relu_forward(const Tensor& x) {
  return unary_op("relu_forward", UnaryOp::relu, x);
}

Tensor relu_backward(const Tensor& grad, const Tensor& x) {
  const Device d = common_device("relu_backward", grad, x);
  check_same_shape("relu_backward", grad, x);
  Tensor out = Tensor::empty(x.shape(), d);
  kernels_for(d).relu_backward(grad.raw(), x.raw(), out.raw(), x.numel());
  return out;
}

void add_(const Tensor& y, const Tensor& x, float alpha) {
  const Device d = common_device("add_", y, x);
  check_same_shape("add_", y, x);
  if (y.shares_storage_with(x) && y.raw() != x.raw()) {
    throw ConfigError("add_: y and x overlap in one storage");
  }
  if (y.raw() == x.raw()) {
    kernels_for(d).unary(UnaryOp::scale, y.raw(), 1.0f + alpha, y.raw(), y.numel());
    return;
  }
  kernels_for(d).axpby(alpha, x.raw(), 1.0f, y.raw(), y.numel());
}

void axpby_(const Tensor& y, float alpha, const Tensor& x, float beta) {
  const Device d = common_device("axpby_", y, x);
  check_same_shape("axpby_", y, x);
  if (y.shares_storage_with(x)) throw ConfigError("axpby_: y and x share storage");
  kernels_for(d).axpby(alpha, x.raw(), beta, y.raw(), y.numel());
}

void add_scalar_(const Tensor& y, float s) {
  check_defined("add_scalar_", y);
  kernels_for(y.device()).unary(UnaryOp::add_scalar, y.raw(), s, y.raw(), y.numel());
}

namespace {
void check_addc(const char* op, const Tensor& y, const Tensor& a, const Tensor& b) {
  common_device(op, y, a);
  common_device(op, y, b);
  check_same_shape(op, y, a);
  check_same_shape(op, y, b);
  if (y.shares_storage_with(a) || y.shares_storage_with(b)) {
    throw ConfigError(std::string(op) + ": y shares storage with an operand");
  }
}
}  // namespace

void addcmul_(const Tensor& y, const Tensor& a, const Tensor& b, float value) {
  check_addc("addcmul_", y, a, b);
  kernels_for(y.device()).addcmul(value, a.raw(), b.raw(), y.raw(), y.numel());
}

void addcdiv_(const Tensor& y, const Tensor& a, const Tensor& b, float value) {
  check_addc("addcdiv_", y, a, b);
  kernels_for(y.device()).addcdiv(value, a.raw(), b.raw(), y.raw(), y.numel());
}

void scale_(const Tensor& y, float s) {
  check_defined("scale_", y);
  kernels_for(y.device()).unary(UnaryOp::scale, y.raw(), s, y.raw(), y.numel());
}

void mul_out(const Tensor& out, const Tensor& x, float s) {
  const Device d = common_device("mul_out", out, x);
  if (out.numel() != x.numel()) {
    throw ConfigError("mul_out: out " + shape_str(out.shape()) + " and x " + shape_str(x.shape()) +
                      " hold different numbers of elements");
  }
  if (out.shares_storage_with(x) && out.raw() != x.raw()) {
    throw ConfigError("mul_out: out and x overlap in one storage");
  }
  kernels_for(d).unary(UnaryOp::scale, x.raw(), s, out.raw(), out.numel());
}

void fill_(const Tensor& y, float value) {
  check_defined("fill_", y);
  kernels_for(y.device()).fill(y.raw(), value, y.numel());
}

void copy_(const Tensor& dst, const Tensor& src) {
  check_defined("copy_", dst);
  check_defined("copy_", src);
  if (dst.numel() != src.numel()) {
    throw ConfigError("copy_: destination " + shape_str(dst.shape()) + " and source " +
                      shape_str(src.shape()) + " hold different numbers of elements");
  }
  if (dst.raw() == src.raw()) return;
  const Device from = src.device();
  const Device to = dst.device();
  if (from == to) {
    kernels_for(to).copy(dst.raw(), src.raw(), src.numel());
  } else if (from == Device::cpu) {
    kernels_for(to).copy_from_host(dst.raw(), src.raw(), src.numel());
  } else if (to == Device::cpu) {
    kernels_for(from).copy_to_host(dst.raw(), src.raw(), src.numel());
  } else {
    copy_(dst, src.to(Device::cpu));
  }
}

Tensor add_rows(const Tensor& x, const Tensor& row) {
  const Device d = common_device("add_rows", x, row);
  const RowsCols rc = rows_cols("add_rows", x);
  if (row.dim() != 1 || row.size(0) != rc.cols) {
    throw ConfigError("add_rows: row " + shape_str(row.shape()) +
                      " does not match the last dimension of " + shape_str(x.shape()));
  }
  Tensor out = Tensor::empty(x.shape(), d);
  kernels_for(d).add_rows(x.raw(), row.raw(), out.raw(), rc.rows, rc.cols);
  return out;
}

Tensor broadcast_rows(const Tensor& row, int64_t rows) {
  check_dim("broadcast_rows", row, 1);
  if (rows < 0) throw ConfigError("broadcast_rows: negative row count");
  Tensor out = Tensor::empty({rows, row.size(0)}, row.device());
  kernels_for(row.device()).broadcast_rows(row.raw(), out.raw(), rows, row.size(0));
  return out;
}

Tensor sum_rows(const Tensor& x) {
  const RowsCols rc = rows_cols("sum_rows", x);
  Tensor out = Tensor::empty({rc.cols}, x.device());
  kernels_for(x.device()).sum_rows(x.raw(), out.raw(), rc.rows, rc.cols);
  return out;
}

Tensor sum(const Tensor& x) {
  check_defined("sum", x);
  Tensor out = Tensor::empty({}, x.device());
  kernels_for(x.device()).sum(x.raw(), out.raw(), x.numel());
  return out;
}

Tensor mean(const Tensor& x) {
  check_defined("mean", x);
  if (x.numel() == 0) throw ConfigError("mean of an empty tensor");
  Tensor out = sum(x);
  scale_(out, 1.0f / static_cast<float>(x.numel()));
  return out;
}

Tensor expand_scalar(const Tensor& scalar, const Shape& shape, float scale) {
  check_defined("expand_scalar", scalar);
  if (scalar.numel() != 1) {
    throw ConfigError("expand_scalar: needs one element, got shape " + shape_str(scalar.shape()));
  }
  Tensor out = Tensor::empty(shape, scalar.device());
  kernels_for(scalar.device()).broadcast_scalar(scalar.raw(), scale, out.raw(), out.numel());
  return out;
}

Tensor transpose(const Tensor& x) {
  check_dim("transpose", x, 2);
  Tensor out = Tensor::empty({x.size(1), x.size(0)}, x.device());
  kernels_for(x.device()).transpose(x.raw(), out.raw(), x.size(0), x.size(1));
  return out;
}

Tensor softmax_forward(const Tensor& x) {
  check_dim("softmax_forward", x, 2);
  Tensor out = Tensor::empty(x.shape(), x.device());
  kernels_for(x.device()).softmax_forward(x.raw(), out.raw(), x.size(0), x.size(1));
  return out;
}

Tensor log_softmax_forward(const Tensor& x) {
  check_dim("log_softmax_forward", x, 2);
  Tensor out = Tensor::empty(x.shape(), x.device());
  kernels_for(x.device()).log_softmax_forward(x.raw(), out.raw(), x.size(0), x.size(1));
  return out;
}

Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out) {
  const Device d = common_device("log_softmax_backward", grad_out, out);
  check_dim("log_softmax_backward", out, 2);
  check_same_shape("log_softmax_backward", grad_out, out);
  Tensor grad_in = Tensor::empty(out.shape(), d);
  kernels_for(d).log_softmax_backward(grad_out.raw(), out.raw(), grad_in.raw(), out.size(0),
                                      out.size(1));
  return grad_in;
}

Tensor nll_loss_forward(const Tensor& logp, const Tensor& targets) {
  const Device d = common_device("nll_loss_forward", logp, targets);
  check_dim("nll_loss_forward", logp, 2);
  check_dim("nll_loss_forward", targets, 1);
  if (targets.size(0) != logp.size(0) || logp.size(0) == 0) {
    throw ConfigError("nll_loss_forward: " + shape_str(logp.shape()) + " log-probabilities and " +
                      shape_str(targets.shape()) + " targets (need one target per row, >= 1 row)");
  }
  Tensor loss = Tensor::empty({}, d);
  kernels_for(d).nll_loss_forward(logp.raw(), targets.raw(), loss.raw(), logp.size(0),
                                  logp.size(1));
  return loss;
}

Tensor nll_loss_backward(const Tensor& grad_loss, const Tensor& targets, int64_t classes) {
  const Device d = common_device("nll_loss_backward", grad_loss, targets);
  check_dim("nll_loss_backward", targets, 1);
  if (grad_loss.numel() != 1 || classes < 1) {
    throw ConfigError("nll_loss_backward: grad_loss must be a scalar and classes >= 1");
  }
  Tensor grad = Tensor::empty({targets.size(0), classes}, d);
  kernels_for(d).nll_loss_backward(grad_loss.raw(), targets.raw(), grad.raw(), targets.size(0),
                                   classes);
  return grad;
}

Tensor argmax_rows(const Tensor& x) {
  check_dim("argmax_rows", x, 2);
  Tensor out = Tensor::empty({x.size(0)}, x.device());
  kernels_for(x.device()).argmax_rows(x.raw(), out.raw(), x.size(0), x.size(1));
  return out;
}

Tensor gather_rows(const Tensor& src, std::span<const int64_t> indices, Device device) {
  check_defined("gather_rows", src);
  if (src.dim() < 1) throw ConfigError("gather_rows: src must have at least one dimension");
  const int64_t n = src.size(0);
  const int64_t row = n == 0 ? 0 : src.numel() / n;
  Shape shape = src.shape();
  shape[0] = static_cast<int64_t>(indices.size());
  Tensor out = Tensor::empty(shape, Device::cpu);
  const float* from = src.data();
  float* to = out.data();
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t r = indices[i];
    if (r < 0 || r >= n) {
      throw ConfigError("gather_rows: index " + std::to_string(r) + " outside [0, " +
                        std::to_string(n) + ")");
    }
    std::copy(from + r * row, from + (r + 1) * row, to + static_cast<int64_t>(i) * row);
  }
  return device == Device::cpu ? out : out.to(device);
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  check_defined("max_abs_diff", a);
  check_defined("max_abs_diff", b);
  if (a.numel() != b.numel()) {
    throw ConfigError("max_abs_diff: " + shape_str(a.shape()) + " vs " + shape_str(b.shape()));
  }
  const std::vector<float> x = a.to_vector();
  const std::vector<float> y = b.to_vector();
  float worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = std::fabs(x[i] - y[i]);
    if (std::isnan(d)) return std::numeric_limits<float>::quiet_NaN();
    if (d > worst) worst = d;
  }
  return worst;
}

}  // namespace course
