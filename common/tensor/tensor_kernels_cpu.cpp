// tensor_kernels_cpu.cpp: the CPU implementation of Kernels (tensor_kernels.h).
//
// Matrix products go to OpenBLAS (cblas_sgemm, row-major), except those whose result has
// at most 8 columns (gemm_thin.h); everything else is a loop.
// The number of BLAS threads is the caller's choice (OPENBLAS_NUM_THREADS, or
// openblas_set_num_threads in a driver).
//
// Two things keep the non-matmul part of a training step small (lesson 07 measures it):
//   - The elementwise loops that touch every activation and gradient work on four floats
//     at a time (F4 below), so they compile to SSE instructions even at -O2, whose
//     cost model leaves loops of unknown length scalar; ReLU becomes branch-free.
//   - Freed blocks stay in the heap (mallopt in the constructor): a step frees and
//     allocates the same sizes again, and glibc's default would return blocks above
//     128 KiB to the kernel and fault their pages in again (~1 us per 4 KiB) every step.
//
// Tested against naive loops by tests/common/tensor_test.cpp.
#include <cblas.h>
#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "error.h"
#include "gemm_thin.h"
#include "tensor_kernels.h"

namespace course {
namespace {

constexpr size_t kAlignment = 64;  // one cache line, and what AVX-512 loads like

// Four floats as one value: GCC and Clang compile arithmetic on it to single SSE (or NEON)
// instructions. Comparisons give lanes of all ones or all zeros (I4), used as masks.
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));
inline F4 load4(const float* p) {
  F4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, F4 v) {
  std::memcpy(p, &v, sizeof v);
}
inline F4 splat4(float x) {
  return F4{x, x, x, x};
}
/// v where mask is set, else +0.0f.
inline F4 select4(I4 mask, F4 v) {
  return reinterpret_cast<F4>(reinterpret_cast<I4>(v) & mask);
}

// out[i] = vf(a, b) four at a time, then sf(a, b) for the remainder. Each block is loaded
// before it is stored, so out may equal a or b.
template <typename VecFn, typename ScalarFn>
void map2(const float* a, const float* b, float* out, int64_t count, VecFn vf, ScalarFn sf) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) store4(out + i, vf(load4(a + i), load4(b + i)));
  for (; i < count; ++i) out[i] = sf(a[i], b[i]);
}
template <typename VecFn, typename ScalarFn>
void map1(const float* x, float* out, int64_t count, VecFn vf, ScalarFn sf) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) store4(out + i, vf(load4(x + i)));
  for (; i < count; ++i) out[i] = sf(x[i]);
}

class CpuKernels final : public Kernels {
 public:
  CpuKernels() {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum; larger blocks still use mmap
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  }

  Device device() const override { return Device::cpu; }

  float* allocate(int64_t count) const override {
    if (count == 0) return nullptr;
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) {
      throw SystemError("out of memory allocating a tensor of " + std::to_string(count) +
                        " floats (" + std::to_string(bytes >> 20) + " MiB)");
    }
    return static_cast<float*>(p);
  }
  void deallocate(float* ptr) const override { std::free(ptr); }

  void copy_from_host(float* dst, const float* src, int64_t count) const override {
    copy(dst, src, count);
  }
  void copy_to_host(float* dst, const float* src, int64_t count) const override {
    copy(dst, src, count);
  }
  void copy(float* dst, const float* src, int64_t count) const override {
    if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
  }
  void fill(float* x, float value, int64_t count) const override { std::fill(x, x + count, value); }

  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, const float* b, float beta, float* c) const override {
    if (m == 0 || n == 0) return;
    if (k == 0) {  // BLAS would still scale c by beta; make beta == 0 clear NaNs too
      if (beta == 0.0f) {
        fill(c, 0.0f, m * n);
      } else {
        for (int64_t i = 0; i < m * n; ++i) c[i] *= beta;
      }
      return;
    }
    if (n <= kThinColumns) return gemm_thin(trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    // Row-major: a is [m,k] (lda = k), or [k,m] when transposed (lda = m); likewise b.
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, blas_int(m), blas_int(n), blas_int(k), alpha,
                a, blas_int(trans_a ? m : k), b, blas_int(trans_b ? k : n), beta, c, blas_int(n));
  }

  void axpby(float alpha, const float* x, float beta, float* y, int64_t count) const override {
    const F4 va = splat4(alpha), vb = splat4(beta);
    map2(
        x, y, y, count, [&](F4 xv, F4 yv) { return va * xv + vb * yv; },
        [&](float xs, float ys) { return alpha * xs + beta * ys; });
  }

  void binary(BinaryOp op, const float* a, const float* b, float* out,
              int64_t count) const override {
    switch (op) {
      case BinaryOp::add:
        map2(
            a, b, out, count, [](F4 x, F4 y) { return x + y; },
            [](float x, float y) { return x + y; });
        break;
      case BinaryOp::sub:
        map2(
            a, b, out, count, [](F4 x, F4 y) { return x - y; },
            [](float x, float y) { return x - y; });
        break;
      case BinaryOp::mul:
        map2(
            a, b, out, count, [](F4 x, F4 y) { return x * y; },
            [](float x, float y) { return x * y; });
        break;
      case BinaryOp::div:
        map2(
            a, b, out, count, [](F4 x, F4 y) { return x / y; },
            [](float x, float y) { return x / y; });
        break;
    }
  }

  void unary(UnaryOp op, const float* x, float scalar, float* out, int64_t count) const override {
    switch (op) {
      case UnaryOp::neg:
        for (int64_t i = 0; i < count; ++i) out[i] = -x[i];
        break;
      case UnaryOp::exp:
        for (int64_t i = 0; i < count; ++i) out[i] = std::exp(x[i]);
        break;
      case UnaryOp::log:
        for (int64_t i = 0; i < count; ++i) out[i] = std::log(x[i]);
        break;
      case UnaryOp::relu:
        map1(
            x, out, count, [](F4 v) { return select4(v > splat4(0.0f), v); },
            [](float v) { return v > 0.0f ? v : 0.0f; });
        break;
      case UnaryOp::scale: {
        const F4 s4 = splat4(scalar);
        map1(
            x, out, count, [&](F4 v) { return s4 * v; }, [&](float v) { return scalar * v; });
        break;
      }
      case UnaryOp::sqrt:
        for (int64_t i = 0; i < count; ++i) out[i] = std::sqrt(x[i]);
        break;
      case UnaryOp::add_scalar: {
        const F4 s4 = splat4(scalar);
        map1(
            x, out, count, [&](F4 v) { return v + s4; }, [&](float v) { return v + scalar; });
        break;
      }
    }
  }

  void addcmul(float value, const float* a, const float* b, float* y,
               int64_t count) const override {
    const F4 v4 = splat4(value);
    int64_t i = 0;
    for (; i + 4 <= count; i += 4) store4(y + i, load4(y + i) + v4 * load4(a + i) * load4(b + i));
    for (; i < count; ++i) y[i] += value * a[i] * b[i];
  }

  void addcdiv(float value, const float* a, const float* b, float* y,
               int64_t count) const override {
    const F4 v4 = splat4(value);
    int64_t i = 0;
    for (; i + 4 <= count; i += 4) store4(y + i, load4(y + i) + v4 * load4(a + i) / load4(b + i));
    for (; i < count; ++i) y[i] += value * a[i] / b[i];
  }

  void relu_backward(const float* grad, const float* x, float* out, int64_t count) const override {
    map2(
        grad, x, out, count, [](F4 g, F4 v) { return select4(v > splat4(0.0f), g); },
        [](float g, float v) { return v > 0.0f ? g : 0.0f; });
  }

  void add_rows(const float* x, const float* row, float* out, int64_t rows,
                int64_t cols) const override {
    for (int64_t i = 0; i < rows; ++i)
      binary(BinaryOp::add, x + i * cols, row, out + i * cols, cols);
  }

  void broadcast_rows(const float* row, float* out, int64_t rows, int64_t cols) const override {
    for (int64_t i = 0; i < rows; ++i) copy(out + i * cols, row, cols);
  }

  void sum_rows(const float* x, float* out, int64_t rows, int64_t cols) const override {
    fill(out, 0.0f, cols);
    for (int64_t i = 0; i < rows; ++i) binary(BinaryOp::add, out, x + i * cols, out, cols);
  }

  void sum(const float* x, float* out, int64_t count) const override {
    double total = 0;
    for (int64_t i = 0; i < count; ++i) total += x[i];
    out[0] = static_cast<float>(total);
  }

  void broadcast_scalar(const float* scalar, float scale, float* out,
                        int64_t count) const override {
    fill(out, scale * scalar[0], count);
  }

  void transpose(const float* x, float* out, int64_t rows, int64_t cols) const override {
    constexpr int64_t kTile = 32;  // tiles keep both the reads and the writes in cache
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        const int64_t i1 = std::min(rows, i0 + kTile);
        const int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j) out[j * rows + i] = x[i * cols + j];
        }
      }
    }
  }

  void softmax_forward(const float* x, float* out, int64_t rows, int64_t cols) const override {
    for (int64_t i = 0; i < rows; ++i) {
      const float* xi = x + i * cols;
      float* oi = out + i * cols;
      const float max = *std::max_element(xi, xi + cols);
      double total = 0;
      for (int64_t j = 0; j < cols; ++j) {
        oi[j] = std::exp(xi[j] - max);
        total += oi[j];
      }
      const float inv = static_cast<float>(1.0 / total);
      for (int64_t j = 0; j < cols; ++j) oi[j] *= inv;
    }
  }

  void log_softmax_forward(const float* x, float* out, int64_t rows, int64_t cols) const override {
    for (int64_t i = 0; i < rows; ++i) {
      const float* xi = x + i * cols;
      float* oi = out + i * cols;
      const float max = *std::max_element(xi, xi + cols);
      double total = 0;
      for (int64_t j = 0; j < cols; ++j) total += std::exp(static_cast<double>(xi[j] - max));
      const float log_total = static_cast<float>(std::log(total));
      for (int64_t j = 0; j < cols; ++j) oi[j] = xi[j] - max - log_total;
    }
  }

  void log_softmax_backward(const float* grad_out, const float* out, float* grad_in, int64_t rows,
                            int64_t cols) const override {
    for (int64_t i = 0; i < rows; ++i) {
      const float* gi = grad_out + i * cols;
      const float* oi = out + i * cols;
      float* ri = grad_in + i * cols;
      double total = 0;
      for (int64_t j = 0; j < cols; ++j) total += gi[j];
      const float t = static_cast<float>(total);
      for (int64_t j = 0; j < cols; ++j) ri[j] = gi[j] - std::exp(oi[j]) * t;
    }
  }

  void nll_loss_forward(const float* logp, const float* targets, float* loss, int64_t rows,
                        int64_t cols) const override {
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) total += logp[i * cols + target_index(targets[i], cols)];
    loss[0] = static_cast<float>(-total / static_cast<double>(rows));
  }

  void nll_loss_backward(const float* grad_loss, const float* targets, float* grad_logp,
                         int64_t rows, int64_t cols) const override {
    fill(grad_logp, 0.0f, rows * cols);
    const float g = -grad_loss[0] / static_cast<float>(rows);
    for (int64_t i = 0; i < rows; ++i) grad_logp[i * cols + target_index(targets[i], cols)] = g;
  }

  void argmax_rows(const float* x, float* out, int64_t rows, int64_t cols) const override {
    for (int64_t i = 0; i < rows; ++i) {
      const float* xi = x + i * cols;
      out[i] = static_cast<float>(std::max_element(xi, xi + cols) - xi);
    }
  }

 private:
  static int blas_int(int64_t v) {
    if (v > std::numeric_limits<int>::max()) {
      throw ConfigError("matrix dimension " + std::to_string(v) + " is too large for BLAS");
    }
    return static_cast<int>(v);
  }

  static int64_t target_index(float target, int64_t cols) {
    const auto t = static_cast<int64_t>(target);
    if (static_cast<float>(t) != target || t < 0 || t >= cols) {
      throw ConfigError("nll_loss: target " + std::to_string(target) +
                        " is not a class index in [0, " + std::to_string(cols) + ")");
    }
    return t;
  }
};

}  // namespace

const Kernels& cpu_kernels() {
  static const CpuKernels kernels;
  return kernels;
}

}  // namespace course
