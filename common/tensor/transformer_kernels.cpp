// transformer_kernels.cpp: the CPU loops behind transformer_kernels.h, and bmm through
// OpenBLAS (cblas_sgemm / cblas_dgemm, row-major, one call per matrix of the batch).
//
// Every loop walks rows in memory order, so each row is read from cache after its first
// pass. Row sums are kept in double (Acc below) whatever T is: for float rows of a few
// hundred numbers that is the difference between 1e-7 and 1e-5 relative error in the mean.
#include "transformer_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <sstream>
#include <string>

#include "error.h"

namespace course {

namespace {

using Acc = double;  // the accumulator of every row reduction

// Throws unless every count is >= 0.
void check_counts(const char* kernel, std::initializer_list<int64_t> counts) {
  for (int64_t count : counts) {
    if (count < 0) {
      throw ConfigError(std::string(kernel) + ": a count is " + std::to_string(count) +
                        "; counts must be >= 0");
    }
  }
}

// The row of table that ids[i] names, or ConfigError naming the id and its position.
int64_t checked_id(const char* kernel, const float* ids, int64_t i, int64_t vocab) {
  const float id = ids[i];
  if (!(id >= 0.0f && id < static_cast<float>(vocab)) || std::floor(id) != id) {
    std::ostringstream shown;  // "7", "-1", "2.5": the id as it is, not "7.000000"
    shown << id;
    throw ConfigError(std::string(kernel) + ": id " + shown.str() + " at position " +
                      std::to_string(i) + " is not a token index in [0, " + std::to_string(vocab) +
                      "); check the tokenizer and the vocabulary size");
  }
  return static_cast<int64_t>(id);
}

int blas_int(int64_t v) {
  return static_cast<int>(v);
}

// One row-major gemm, float or double.
void gemm_blas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, const float* b, float beta, float* c) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m), blas_int(n), blas_int(k), alpha, a,
              blas_int(trans_a ? m : k), b, blas_int(trans_b ? k : n), beta, c, blas_int(n));
}
void gemm_blas(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
               const double* a, const double* b, double beta, double* c) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, blas_int(m), blas_int(n), blas_int(k), alpha, a,
              blas_int(trans_a ? m : k), b, blas_int(trans_b ? k : n), beta, c, blas_int(n));
}

// GELU's constants: sqrt(2/pi) and the cubic coefficient.
constexpr double kGeluScale = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

}  // namespace

template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* weight, const T* bias,
                       int64_t rows, int64_t cols, double eps) {
  check_counts("layernorm_forward", {rows, cols});
  if (!(eps > 0.0)) {
    throw ConfigError("layernorm_forward: eps is " + std::to_string(eps) + "; it must be > 0");
  }
  if (cols == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = out + r * cols;
    Acc sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += xr[c];
    const Acc m = sum / static_cast<Acc>(cols);
    Acc sq = 0;  // two passes: the variance of x - mean, not E[x²] - mean² (cancellation)
    for (int64_t c = 0; c < cols; ++c) {
      const Acc d = xr[c] - m;
      sq += d * d;
    }
    const Acc s = 1.0 / std::sqrt(sq / static_cast<Acc>(cols) + eps);
    const T mt = static_cast<T>(m), st = static_cast<T>(s);
    for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mt) * st * weight[c] + bias[c];
    if (mean != nullptr) mean[r] = mt;
    if (rstd != nullptr) rstd[r] = st;
  }
}

template <typename T>
void layernorm_backward(T* dx, T* dweight, T* dbias, const T* dout, const T* x, const T* weight,
                        const T* mean, const T* rstd, int64_t rows, int64_t cols) {
  check_counts("layernorm_backward", {rows, cols});
  if (cols == 0) return;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* gr = dout + r * cols;
    const T m = mean[r], s = rstd[r];
    if (dweight != nullptr || dbias != nullptr) {
      for (int64_t c = 0; c < cols; ++c) {
        if (dbias != nullptr) dbias[c] += gr[c];
        if (dweight != nullptr) dweight[c] += (xr[c] - m) * s * gr[c];
      }
    }
    if (dx == nullptr) continue;
    // The two row means of dnorm = dout weight: mean(dnorm) and mean(dnorm norm).
    Acc g_sum = 0, gn_sum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const Acc g = static_cast<Acc>(gr[c]) * weight[c];
      g_sum += g;
      gn_sum += g * ((static_cast<Acc>(xr[c]) - m) * s);
    }
    const T g_mean = static_cast<T>(g_sum / static_cast<Acc>(cols));
    const T gn_mean = static_cast<T>(gn_sum / static_cast<Acc>(cols));
    T* dxr = dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      const T norm = (xr[c] - m) * s;
      dxr[c] = (gr[c] * weight[c] - g_mean - norm * gn_mean) * s;
    }
  }
}

template <typename T>
void gelu_forward(T* out, const T* x, int64_t n) {
  check_counts("gelu_forward", {n});
  const T scale = static_cast<T>(kGeluScale), cubic = static_cast<T>(kGeluCubic);
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    out[i] = T(0.5) * v * (T(1) + std::tanh(scale * (v + cubic * v * v * v)));
  }
}

template <typename T>
void gelu_backward(T* dx, const T* dout, const T* x, int64_t n) {
  check_counts("gelu_backward", {n});
  const T scale = static_cast<T>(kGeluScale), cubic = static_cast<T>(kGeluCubic);
  for (int64_t i = 0; i < n; ++i) {
    // y = v/2 (1 + t), t = tanh(u), u = scale (v + cubic v³):
    // dy/dv = (1 + t)/2 + v/2 (1 - t²) scale (1 + 3 cubic v²)
    const T v = x[i];
    const T t = std::tanh(scale * (v + cubic * v * v * v));
    const T du = scale * (T(1) + T(3) * cubic * v * v);
    dx[i] = (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * du) * dout[i];
  }
}

template <typename T>
void embedding_forward(T* out, const float* ids, const T* table, int64_t n, int64_t vocab,
                       int64_t dim) {
  check_counts("embedding_forward", {n, vocab, dim});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = checked_id("embedding_forward", ids, i, vocab);
    std::memcpy(out + i * dim, table + id * dim, static_cast<size_t>(dim) * sizeof(T));
  }
}

template <typename T>
void embedding_backward(T* dtable, const float* ids, const T* dout, int64_t n, int64_t vocab,
                        int64_t dim) {
  check_counts("embedding_backward", {n, vocab, dim});
  for (int64_t i = 0; i < n; ++i) checked_id("embedding_backward", ids, i, vocab);
  for (int64_t i = 0; i < n; ++i) {  // checked first: a bad id leaves dtable untouched
    T* row = dtable + static_cast<int64_t>(ids[i]) * dim;
    const T* g = dout + i * dim;
    for (int64_t c = 0; c < dim; ++c) row[c] += g[c];
  }
}

template <typename T>
void bmm(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k, T alpha,
         const T* a, const T* b, T beta, T* c) {
  check_counts("bmm", {batch, m, n, k});
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {  // BLAS would still scale c by beta; make beta == 0 clear NaNs too
    for (int64_t i = 0; i < batch * m * n; ++i) c[i] = beta == T(0) ? T(0) : beta * c[i];
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    gemm_blas(trans_a, trans_b, m, n, k, alpha, a + i * m * k, b + i * k * n, beta, c + i * m * n);
  }
}

template <typename T>
void softmax_forward(T* out, const T* x, int64_t rows, int64_t cols, bool causal) {
  check_counts("softmax_forward", {rows, cols});
  if (rows == 0 || cols == 0) return;
  if (causal && rows % cols != 0) {
    throw ConfigError("softmax_forward: causal rows " + std::to_string(rows) +
                      " are not whole [seq, seq] blocks of seq = cols = " + std::to_string(cols));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = out + r * cols;
    const int64_t keep = causal ? r % cols + 1 : cols;  // columns [0, keep) take part
    T row_max = xr[0];
    for (int64_t c = 1; c < keep; ++c) row_max = std::max(row_max, xr[c]);
    Acc sum = 0;
    for (int64_t c = 0; c < keep; ++c) {
      yr[c] = std::exp(xr[c] - row_max);
      sum += yr[c];
    }
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t c = 0; c < keep; ++c) yr[c] *= inv;
    for (int64_t c = keep; c < cols; ++c) yr[c] = T(0);
  }
}

template <typename T>
void softmax_backward(T* dx, const T* dout, const T* p, int64_t rows, int64_t cols) {
  check_counts("softmax_backward", {rows, cols});
  for (int64_t r = 0; r < rows; ++r) {
    const T* gr = dout + r * cols;
    const T* pr = p + r * cols;
    Acc dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += static_cast<Acc>(gr[c]) * pr[c];
    const T d = static_cast<T>(dot);
    T* dxr = dx + r * cols;
    for (int64_t c = 0; c < cols; ++c) dxr[c] = pr[c] * (gr[c] - d);
  }
}

template <typename T>
void split_heads(T* out, const T* x, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim) {
  check_counts("split_heads", {batch, seq, heads, head_dim});
  const size_t bytes = static_cast<size_t>(head_dim) * sizeof(T);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t s = 0; s < seq; ++s) {
        std::memcpy(out + ((b * heads + h) * seq + s) * head_dim,
                    x + ((b * seq + s) * heads + h) * head_dim, bytes);
      }
    }
  }
}

template <typename T>
void merge_heads(T* out, const T* x, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim) {
  check_counts("merge_heads", {batch, seq, heads, head_dim});
  const size_t bytes = static_cast<size_t>(head_dim) * sizeof(T);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        std::memcpy(out + ((b * seq + s) * heads + h) * head_dim,
                    x + ((b * heads + h) * seq + s) * head_dim, bytes);
      }
    }
  }
}

// Explicit instantiations: float for training, double for the finite-difference tests.
template void layernorm_forward(float*, float*, float*, const float*, const float*, const float*,
                                int64_t, int64_t, double);
template void layernorm_backward(float*, float*, float*, const float*, const float*, const float*,
                                 const float*, const float*, int64_t, int64_t);
template void gelu_forward(float*, const float*, int64_t);
template void gelu_backward(float*, const float*, const float*, int64_t);
template void embedding_forward(float*, const float*, const float*, int64_t, int64_t, int64_t);
template void embedding_backward(float*, const float*, const float*, int64_t, int64_t, int64_t);
template void bmm(bool, bool, int64_t, int64_t, int64_t, int64_t, float, const float*, const float*,
                  float, float*);
template void softmax_forward(float*, const float*, int64_t, int64_t, bool);
template void softmax_backward(float*, const float*, const float*, int64_t, int64_t);
template void split_heads(float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void merge_heads(float*, const float*, int64_t, int64_t, int64_t, int64_t);
template void layernorm_forward(double*, double*, double*, const double*, const double*,
                                const double*, int64_t, int64_t, double);
template void layernorm_backward(double*, double*, double*, const double*, const double*,
                                 const double*, const double*, const double*, int64_t, int64_t);
template void gelu_forward(double*, const double*, int64_t);
template void gelu_backward(double*, const double*, const double*, int64_t);
template void embedding_forward(double*, const float*, const double*, int64_t, int64_t, int64_t);
template void embedding_backward(double*, const float*, const double*, int64_t, int64_t, int64_t);
template void bmm(bool, bool, int64_t, int64_t, int64_t, int64_t, double, const double*,
                  const double*, double, double*);
template void softmax_forward(double*, const double*, int64_t, int64_t, bool);
template void softmax_backward(double*, const double*, const double*, int64_t, int64_t);
template void split_heads(double*, const double*, int64_t, int64_t, int64_t, int64_t);
template void merge_heads(double*, const double*, int64_t, int64_t, int64_t, int64_t);

}  // namespace course
