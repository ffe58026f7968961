// tensor_kernels.h: the one seam between CPU and CUDA tensor code.
//
// A Kernels object is one device's implementation of every primitive the tensors of
// tensor.h and tensor_ops.h need: memory, BLAS, elementwise maps, row reductions and the
// softmax family. tensor_kernels_cpu.cpp implements it with loops and OpenBLAS;
// tensor_kernels_cuda.cu with CUDA kernels and cuBLAS (compiled only when nvcc is found).
// kernels_for(device) is the only place that chooses between them.
//
// What this is not: an API for lesson code. Lessons call tensor_ops.h, which checks shapes
// and devices and then calls these raw, unchecked entry points.
//
// Conventions for every method:
//   - pointers are to memory of this device, float32, contiguous, row-major;
//   - a [rows, cols] matrix is `rows` runs of `cols` floats;
//   - `out` may alias an input only where the method says so;
//   - counts are >= 0, and 0 is a no-op;
//   - results that are one number (sum, nll_loss_forward) are written to out[0] on the
//     device, so nothing waits for the device unless the caller asks (Tensor::item()).
// Kernels objects are stateless after construction: every method is thread-safe. On CUDA,
// calls are queued on the current thread's default stream and return before they finish.
//
// This header is also compiled by nvcc, so it sticks to C++17.
#pragma once

#include <cstdint>
#include <string>

namespace course {

/// Where a tensor's numbers live.
enum class Device { cpu, cuda };

/// "cpu" or "cuda".
const char* device_name(Device device);

/// Elementwise maps of two same-sized arrays: out[i] = a[i] (op) b[i].
enum class BinaryOp { add, sub, mul, div };

/// Elementwise maps of one array: out[i] = f(x[i]).
///   neg: -x   exp: e^x   log: ln x   relu: max(x, 0)   scale: s * x   sqrt: sqrt(x)
///   add_scalar: x + s
enum class UnaryOp { neg, exp, log, relu, scale, sqrt, add_scalar };

/// The numeric kernels of one device: tensors call them on raw float pointers of that
/// device. The CPU's and CUDA's implementations are tensor_kernels_cpu.cpp and _cuda.cu.
class Kernels {
 public:
  virtual ~Kernels() = default;
  /// The device whose memory these kernels take.
  virtual Device device() const = 0;

  // Memory. allocate(0) may return nullptr; deallocate(nullptr) is a no-op.
  /// `count` floats of this device's memory, uninitialised.
  virtual float* allocate(int64_t count) const = 0;
  /// Frees what allocate() returned.
  virtual void deallocate(float* ptr) const = 0;
  /// Copies `count` floats from host memory to this device.
  virtual void copy_from_host(float* dst, const float* host_src, int64_t count) const = 0;
  /// Copies `count` floats from this device to host memory.
  virtual void copy_to_host(float* host_dst, const float* src, int64_t count) const = 0;
  /// dst and src on this device; they must not overlap.
  virtual void copy(float* dst, const float* src, int64_t count) const = 0;
  /// x[i] = value.
  virtual void fill(float* x, float value, int64_t count) const = 0;

  /// c[m,n] = alpha * op(a) op(b) + beta * c, op(x) = x or x transposed.
  /// op(a) is [m,k] (a is [k,m] when trans_a), op(b) is [k,n] (b is [n,k] when trans_b).
  /// With beta == 0, c's old contents are ignored (NaNs included).
  virtual void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                    const float* a, const float* b, float beta, float* c) const = 0;
  /// y = alpha * x + beta * y. y may not alias x.
  virtual void axpby(float alpha, const float* x, float beta, float* y, int64_t count) const = 0;

  /// out may alias a or b.
  virtual void binary(BinaryOp op, const float* a, const float* b, float* out,
                      int64_t count) const = 0;
  /// y[i] += value * a[i] * b[i] (addcmul) or value * a[i] / b[i] (addcdiv). y may not
  /// alias a or b.
  virtual void addcmul(float value, const float* a, const float* b, float* y,
                       int64_t count) const = 0;
  /// y[i] += value * a[i] / b[i] (see addcmul).
  virtual void addcdiv(float value, const float* a, const float* b, float* y,
                       int64_t count) const = 0;
  /// `scalar` is s for UnaryOp::scale and add_scalar, ignored otherwise. out may alias x.
  virtual void unary(UnaryOp op, const float* x, float scalar, float* out, int64_t count) const = 0;
  /// out[i] = x[i] > 0 ? grad[i] : 0. out may alias grad.
  virtual void relu_backward(const float* grad, const float* x, float* out,
                             int64_t count) const = 0;

  /// out[i,j] = x[i,j] + row[j]; x and out are [rows, cols], row is [cols]. out may alias x.
  virtual void add_rows(const float* x, const float* row, float* out, int64_t rows,
                        int64_t cols) const = 0;
  /// out[i,j] = row[j].
  virtual void broadcast_rows(const float* row, float* out, int64_t rows, int64_t cols) const = 0;
  /// out[j] = sum over i of x[i,j] (the gradient of add_rows with respect to `row`).
  virtual void sum_rows(const float* x, float* out, int64_t rows, int64_t cols) const = 0;
  /// out[0] = sum of x[0..count), accumulated in double. count 0 gives 0.
  virtual void sum(const float* x, float* out, int64_t count) const = 0;
  /// out[i] = scale * scalar[0] for i < count (the gradient of sum and mean).
  virtual void broadcast_scalar(const float* scalar, float scale, float* out,
                                int64_t count) const = 0;
  /// out[j,i] = x[i,j]; x is [rows, cols], out is [cols, rows]. No aliasing.
  virtual void transpose(const float* x, float* out, int64_t rows, int64_t cols) const = 0;

  // The softmax family, row by row over [rows, cols] (cols >= 1), numerically stable:
  //   softmax(x)_j     = exp(x_j - max) / sum_k exp(x_k - max)
  //   log_softmax(x)_j = x_j - max - log(sum_k exp(x_k - max))
  /// out = softmax(x), row by row.
  virtual void softmax_forward(const float* x, float* out, int64_t rows, int64_t cols) const = 0;
  /// out = log_softmax(x), row by row.
  virtual void log_softmax_forward(const float* x, float* out, int64_t rows,
                                   int64_t cols) const = 0;
  /// grad_in[i,j] = grad_out[i,j] - exp(out[i,j]) * sum_k grad_out[i,k], where out is the
  /// forward's result (log-probabilities).
  virtual void log_softmax_backward(const float* grad_out, const float* out, float* grad_in,
                                    int64_t rows, int64_t cols) const = 0;
  /// loss[0] = -(1/rows) * sum_i logp[i, targets[i]]. targets hold class indices as floats.
  /// The CPU throws ConfigError on an index outside [0, cols); CUDA writes NaN instead.
  virtual void nll_loss_forward(const float* logp, const float* targets, float* loss, int64_t rows,
                                int64_t cols) const = 0;
  /// grad_logp[i,j] = -grad_loss[0] / rows where j == targets[i], else 0.
  virtual void nll_loss_backward(const float* grad_loss, const float* targets, float* grad_logp,
                                 int64_t rows, int64_t cols) const = 0;
  /// out[i] = the first j with the largest x[i,j], as a float.
  virtual void argmax_rows(const float* x, float* out, int64_t rows, int64_t cols) const = 0;
};

/// The kernels of `device`. Throws ConfigError for Device::cuda in a build without CUDA.
const Kernels& kernels_for(Device device);

/// True when this build has CUDA and the machine has at least one usable GPU.
bool cuda_available();

/// The number of GPUs this process sees: 0 in a build without CUDA or on a machine without
/// a GPU (or a driver), never an error.
int cuda_device_count();

/// Makes GPU `index` the current device of the calling thread: CUDA tensors created after
/// it live there. A rank calls it with its LOCAL_RANK before making CUDA tensors. Throws
/// ConfigError naming what is missing: CUDA in the build, a GPU, or GPU `index` (one rank
/// per GPU: start at most cuda_device_count() ranks per machine).
void cuda_set_device(int index);

/// Opens cuBLAS now (the first matrix product on a GPU does it anyway; it is not linked,
/// so a process that never multiplies on a GPU never loads it). Needs no GPU. Throws
/// SystemError naming the library and what to do when it cannot be opened, ConfigError in
/// a build without CUDA.
void cuda_open_blas();

/// "cpu" -> Device::cpu, "cuda" -> Device::cuda; ConfigError naming both otherwise.
Device parse_device(const std::string& name);

}  // namespace course
