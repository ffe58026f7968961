// tensor_ops.h: the math on Tensors (tensor.h), on whichever device they live.
//
//   Tensor h = matmul(x, w, /*trans_a=*/false, /*trans_b=*/true);   // x wᵀ
//   Tensor y = relu_forward(add_rows(h, b));                         // + bias, then ReLU
//
// Each function checks its arguments (defined, same device, shapes), throws ConfigError
// naming the function and the shapes when they are wrong, and then calls the device's
// kernels (tensor_kernels.h). Functions that return a Tensor allocate it; functions whose
// name ends in `_` write into their first argument, as in PyTorch.
//
// Naming follows llm.c: an op that autograd differentiates has `<op>_forward` and
// `<op>_backward` here when its backward is not itself one of these ops.
//
// What this is not: autograd. These functions record nothing; lesson 06 builds the graph
// on top of them.
//
// Timing: every matrix product (gemm, matmul) adds its wall time, measured with a steady
// clock around the kernel, to thread_matmul_stats(). On CUDA the kernel is asynchronous,
// so the time is the launch time unless the caller synchronises.
#pragma once

#include <cstdint>
#include <span>

#include "tensor.h"

namespace course {

// ---- Matrix products ---------------------------------------------------------------
/// c = alpha * op(a) op(b) + beta * c for 2-D tensors (BLAS sgemm). op(x) is x, or xᵀ
/// when trans_x. REQUIRES: op(a) is [m,k], op(b) is [k,n], c is [m,n], all on one device.
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, float alpha, float beta,
          const Tensor& c);
/// op(a) op(b), a new [m,n] tensor.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// ---- Elementwise, same shapes --------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
/// Natural logarithm; log(0) = -inf and log(x < 0) = NaN, as in IEEE arithmetic.
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
/// s * x.
Tensor scale(const Tensor& x, float s);
/// max(x, 0).
Tensor relu_forward(const Tensor& x);
/// grad where x > 0, else 0 (the subgradient at 0 is 0, as in PyTorch).
Tensor relu_backward(const Tensor& grad, const Tensor& x);

// ---- In place (the first argument is written) ---------------------------------------
/// y += alpha * x. REQUIRES: same shape, same device, y does not share storage with x.
void add_(const Tensor& y, const Tensor& x, float alpha = 1.0f);
/// y = alpha * x + beta * y (BLAS axpby). Same requirements as add_.
void axpby_(const Tensor& y, float alpha, const Tensor& x, float beta);
/// y *= s.
void scale_(const Tensor& y, float s);
/// out = s * x in one pass (torch's mul_out: a copy that scales). REQUIRES: same numel,
/// same device; out is x itself or shares no storage with it.
void mul_out(const Tensor& out, const Tensor& x, float s);
/// y += s.
void add_scalar_(const Tensor& y, float s);
/// y += value * a * b, elementwise (torch's addcmul_). Same shapes; y shares no storage
/// with a or b.
void addcmul_(const Tensor& y, const Tensor& a, const Tensor& b, float value);
/// y += value * a / b, elementwise (torch's addcdiv_). Same requirements as addcmul_.
void addcdiv_(const Tensor& y, const Tensor& a, const Tensor& b, float value);
void fill_(const Tensor& y, float value);
/// dst = src, element by element; the devices may differ. REQUIRES: same numel.
void copy_(const Tensor& dst, const Tensor& src);

// ---- Broadcasting over rows, and reductions -------------------------------------------
/// x + row broadcast over the leading dimensions: x is [..., n], row is [n] (a bias).
Tensor add_rows(const Tensor& x, const Tensor& row);
/// [rows, n] where every row is `row` ([n]).
Tensor broadcast_rows(const Tensor& row, int64_t rows);
/// The sum over every dimension but the last: x is [..., n], the result is [n].
Tensor sum_rows(const Tensor& x);
/// The sum of every element, a scalar (shape {}).
Tensor sum(const Tensor& x);
/// The mean of every element, a scalar. REQUIRES: numel() > 0.
Tensor mean(const Tensor& x);
/// A tensor of `shape` filled with s * scale, where s is the one element of `scalar`.
Tensor expand_scalar(const Tensor& scalar, const Shape& shape, float scale = 1.0f);
/// xᵀ for a 2-D x, copied.
Tensor transpose(const Tensor& x);

// ---- Softmax family and losses, along the last dimension of a 2-D tensor ---------------
Tensor softmax_forward(const Tensor& x);
Tensor log_softmax_forward(const Tensor& x);
/// The gradient of log_softmax: grad_out - softmax * rowsum(grad_out); `out` is the
/// forward's result.
Tensor log_softmax_backward(const Tensor& grad_out, const Tensor& out);
/// The mean negative log-likelihood: -(1/B) sum_i logp[i, targets[i]], a scalar.
/// logp is [B, C]; targets is [B] of class indices stored as floats (exact below 2^24).
/// Throws ConfigError (on the CPU) for an index outside [0, C).
Tensor nll_loss_forward(const Tensor& logp, const Tensor& targets);
/// The gradient of nll_loss_forward with respect to logp ([B, C]); grad_loss is a scalar.
Tensor nll_loss_backward(const Tensor& grad_loss, const Tensor& targets, int64_t classes);
/// The index of the largest element of each row of a 2-D x, as floats ([rows]).
Tensor argmax_rows(const Tensor& x);

// ---- Data movement ---------------------------------------------------------------------
/// Rows of a CPU tensor, in the order of `indices`, stacked into a new tensor on `device`:
/// the result is [indices.size(), ...src.shape()[1:]]. Throws ConfigError on a bad index.
Tensor gather_rows(const Tensor& src, std::span<const int64_t> indices,
                   Device device = Device::cpu);

// ---- Comparison (tests and self-checks) -------------------------------------------------
/// max_i |a[i] - b[i]|, on the host; NaN anywhere gives NaN. REQUIRES: same numel.
float max_abs_diff(const Tensor& a, const Tensor& b);

// ---- Where the time goes ----------------------------------------------------------------
/// Running totals of this thread's matrix products. Each thread has its own, so replicas
/// running in threads (lesson 08) do not mix their counts.
struct MatmulStats {
  double seconds = 0;  ///< wall time inside the gemm kernels
  int64_t calls = 0;   ///< products counted
  double flops = 0;    ///< 2*m*n*k per product
};
/// This thread's totals; reset by assigning {}.
MatmulStats& thread_matmul_stats();

}  // namespace course
