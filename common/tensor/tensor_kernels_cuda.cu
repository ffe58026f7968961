// tensor_kernels_cuda.cu: the CUDA implementation of Kernels (tensor_kernels.h).
//
// Built only when CMake finds nvcc (COURSE_HAVE_CUDA=1); reached only via kernels_for().
// Matrix products go to cuBLAS; the rest are simple grid-stride kernels, one thread per
// element (or per row for the softmax family, whose rows are short: 10 classes). They are
// written to be obviously correct, not fast: the matmuls dominate a training step.
//
// Every CUDA call goes through check_cuda / check_cublas, which throw SystemError naming
// the call. Kernels run on the default stream of the calling thread; copies to the host
// synchronise, so item() and to_vector() always see finished results.
//
// cuBLAS is not linked but opened at the first matrix product on a GPU (cublas_library.h).
//
// Tested by tests/common/tensor_test.cpp against the CPU kernels (skipped without a GPU).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "cublas_library.h"
#include "error.h"
#include "tensor_kernels.h"

namespace course {
namespace {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw SystemError(std::string(what) + ": " + cudaGetErrorString(status) +
                      ". Check the GPU with nvidia-smi, or keep tensors on Device::cpu");
  }
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw SystemError(std::string(what) + ": cuBLAS status " + std::to_string(status));
  }
}

void check_launch(const char* kernel) {
  check_cuda(cudaGetLastError(), kernel);
}

// One cuBLAS handle per thread (handles are not meant to be shared between threads).
struct CublasHandle {
  cublasHandle_t handle = nullptr;
  CublasHandle() { check_cublas(cublas_library().create(&handle), "cublasCreate"); }
  ~CublasHandle() { cublas_library().destroy(handle); }
};
cublasHandle_t thread_cublas() {
  thread_local CublasHandle h;
  return h.handle;
}

constexpr int kThreads = 256;
int blocks_for(int64_t count) {
  const int64_t b = (count + kThreads - 1) / kThreads;
  return static_cast<int>(b < 4096 ? (b < 1 ? 1 : b) : 4096);
}

#define GRID_STRIDE(i, count)                                                   \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (count); \
       i += int64_t(blockDim.x) * gridDim.x)

__global__ void fill_kernel(float* x, float value, int64_t count) {
  GRID_STRIDE(i, count) x[i] = value;
}

__global__ void axpby_kernel(float alpha, const float* x, float beta, float* y, int64_t count) {
  GRID_STRIDE(i, count) y[i] = alpha * x[i] + beta * y[i];
}

__global__ void binary_kernel(int op, const float* a, const float* b, float* out, int64_t count) {
  GRID_STRIDE(i, count) {
    const float x = a[i], y = b[i];
    out[i] = op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x / y;
  }
}

__global__ void unary_kernel(int op, const float* x, float scalar, float* out, int64_t count) {
  GRID_STRIDE(i, count) {
    const float v = x[i];
    switch (op) {
      case 0:
        out[i] = -v;
        break;
      case 1:
        out[i] = expf(v);
        break;
      case 2:
        out[i] = logf(v);
        break;
      case 3:
        out[i] = v > 0.0f ? v : 0.0f;
        break;
      case 4:
        out[i] = scalar * v;
        break;
      case 5:
        out[i] = sqrtf(v);
        break;
      default:
        out[i] = v + scalar;
        break;
    }
  }
}

__global__ void addc_kernel(bool divide, float value, const float* a, const float* b, float* y,
                            int64_t count) {
  GRID_STRIDE(i, count) y[i] += divide ? value * a[i] / b[i] : value * a[i] * b[i];
}

__global__ void relu_backward_kernel(const float* grad, const float* x, float* out, int64_t count) {
  GRID_STRIDE(i, count) out[i] = x[i] > 0.0f ? grad[i] : 0.0f;
}

__global__ void add_rows_kernel(const float* x, const float* row, float* out, int64_t rows,
                                int64_t cols) {
  GRID_STRIDE(i, rows * cols) out[i] = x[i] + row[i % cols];
}

__global__ void broadcast_rows_kernel(const float* row, float* out, int64_t rows, int64_t cols) {
  GRID_STRIDE(i, rows * cols) out[i] = row[i % cols];
}

__global__ void sum_rows_kernel(const float* x, float* out, int64_t rows, int64_t cols) {
  GRID_STRIDE(j, cols) {
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) total += x[i * cols + j];
    out[j] = static_cast<float>(total);
  }
}

// One block: each thread sums a stride, then a tree in shared memory.
__global__ void sum_kernel(const float* x, float* out, int64_t count) {
  __shared__ double partial[kThreads];
  double total = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) total += x[i];
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = static_cast<float>(partial[0]);
}

__global__ void broadcast_scalar_kernel(const float* scalar, float scale, float* out,
                                        int64_t count) {
  GRID_STRIDE(i, count) out[i] = scale * scalar[0];
}

__global__ void transpose_kernel(const float* x, float* out, int64_t rows, int64_t cols) {
  GRID_STRIDE(k, rows * cols) {
    const int64_t i = k / cols, j = k % cols;
    out[j * rows + i] = x[k];
  }
}

// The softmax family: one thread per row.
__global__ void softmax_kernel(const float* x, float* out, int64_t rows, int64_t cols,
                               bool log_space) {
  GRID_STRIDE(i, rows) {
    const float* xi = x + i * cols;
    float* oi = out + i * cols;
    float max = xi[0];
    for (int64_t j = 1; j < cols; ++j) max = fmaxf(max, xi[j]);
    double total = 0;
    for (int64_t j = 0; j < cols; ++j) total += exp(static_cast<double>(xi[j] - max));
    const float log_total = static_cast<float>(log(total));
    for (int64_t j = 0; j < cols; ++j) {
      oi[j] = log_space ? xi[j] - max - log_total : expf(xi[j] - max - log_total);
    }
  }
}

__global__ void log_softmax_backward_kernel(const float* grad_out, const float* out, float* grad_in,
                                            int64_t rows, int64_t cols) {
  GRID_STRIDE(i, rows) {
    double total = 0;
    for (int64_t j = 0; j < cols; ++j) total += grad_out[i * cols + j];
    for (int64_t j = 0; j < cols; ++j) {
      grad_in[i * cols + j] =
          grad_out[i * cols + j] - expf(out[i * cols + j]) * static_cast<float>(total);
    }
  }
}

__device__ bool valid_target(float t, int64_t cols) {
  return t >= 0.0f && t < static_cast<float>(cols) && floorf(t) == t;
}

__global__ void nll_loss_forward_kernel(const float* logp, const float* targets, float* loss,
                                        int64_t rows, int64_t cols) {
  __shared__ double partial[kThreads];
  __shared__ int bad;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  double total = 0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    const float t = targets[i];
    if (valid_target(t, cols)) {
      total += logp[i * cols + static_cast<int64_t>(t)];
    } else {
      bad = 1;
    }
  }
  partial[threadIdx.x] = total;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    loss[0] = bad ? nanf("") : static_cast<float>(-partial[0] / static_cast<double>(rows));
  }
}

__global__ void nll_loss_backward_kernel(const float* grad_loss, const float* targets,
                                         float* grad_logp, int64_t rows, int64_t cols) {
  GRID_STRIDE(i, rows) {
    const float t = targets[i];
    if (valid_target(t, cols)) {
      grad_logp[i * cols + static_cast<int64_t>(t)] = -grad_loss[0] / static_cast<float>(rows);
    }
  }
}

__global__ void argmax_rows_kernel(const float* x, float* out, int64_t rows, int64_t cols) {
  GRID_STRIDE(i, rows) {
    int64_t best = 0;
    for (int64_t j = 1; j < cols; ++j) {
      if (x[i * cols + j] > x[i * cols + best]) best = j;
    }
    out[i] = static_cast<float>(best);
  }
}

class CudaKernels final : public Kernels {
 public:
  Device device() const override { return Device::cuda; }

  float* allocate(int64_t count) const override {
    if (count == 0) return nullptr;
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, static_cast<size_t>(count) * sizeof(float)), "cudaMalloc");
    return static_cast<float*>(p);
  }
  void deallocate(float* ptr) const override {
    if (ptr != nullptr) cudaFree(ptr);  // never throws: called from destructors
  }
  void copy_from_host(float* dst, const float* src, int64_t count) const override {
    if (count > 0) check_cuda(cudaMemcpy(dst, src, bytes(count), cudaMemcpyHostToDevice), "H2D");
  }
  void copy_to_host(float* dst, const float* src, int64_t count) const override {
    if (count > 0) check_cuda(cudaMemcpy(dst, src, bytes(count), cudaMemcpyDeviceToHost), "D2H");
  }
  void copy(float* dst, const float* src, int64_t count) const override {
    if (count > 0) {
      check_cuda(cudaMemcpyAsync(dst, src, bytes(count), cudaMemcpyDeviceToDevice), "D2D");
    }
  }
  void fill(float* x, float value, int64_t count) const override {
    if (count == 0) return;
    fill_kernel<<<blocks_for(count), kThreads>>>(x, value, count);
    check_launch("fill_kernel");
  }

  void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, const float* b, float beta, float* c) const override {
    if (m == 0 || n == 0) return;
    if (k == 0) {
      if (beta == 0.0f) {
        fill(c, 0.0f, m * n);
      } else {
        unary(UnaryOp::scale, c, beta, c, m * n);
      }
      return;
    }
    // cuBLAS is column-major. A row-major [m,n] matrix is a column-major [n,m] one, so
    // compute cᵀ = op(b)ᵀ op(a)ᵀ: swap the operands and the dimensions m and n.
    check_cublas(cublas_library().sgemm(
                     thread_cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                     trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                     static_cast<int>(k), &alpha, b, static_cast<int>(trans_b ? k : n), a,
                     static_cast<int>(trans_a ? m : k), &beta, c, static_cast<int>(n)),
                 "cublasSgemm");
  }

  void axpby(float alpha, const float* x, float beta, float* y, int64_t count) const override {
    if (count == 0) return;
    axpby_kernel<<<blocks_for(count), kThreads>>>(alpha, x, beta, y, count);
    check_launch("axpby_kernel");
  }
  void binary(BinaryOp op, const float* a, const float* b, float* out,
              int64_t count) const override {
    if (count == 0) return;
    binary_kernel<<<blocks_for(count), kThreads>>>(static_cast<int>(op), a, b, out, count);
    check_launch("binary_kernel");
  }
  void unary(UnaryOp op, const float* x, float scalar, float* out, int64_t count) const override {
    if (count == 0) return;
    unary_kernel<<<blocks_for(count), kThreads>>>(static_cast<int>(op), x, scalar, out, count);
    check_launch("unary_kernel");
  }
  void addcmul(float value, const float* a, const float* b, float* y,
               int64_t count) const override {
    if (count == 0) return;
    addc_kernel<<<blocks_for(count), kThreads>>>(false, value, a, b, y, count);
    check_launch("addc_kernel");
  }
  void addcdiv(float value, const float* a, const float* b, float* y,
               int64_t count) const override {
    if (count == 0) return;
    addc_kernel<<<blocks_for(count), kThreads>>>(true, value, a, b, y, count);
    check_launch("addc_kernel");
  }
  void relu_backward(const float* grad, const float* x, float* out, int64_t count) const override {
    if (count == 0) return;
    relu_backward_kernel<<<blocks_for(count), kThreads>>>(grad, x, out, count);
    check_launch("relu_backward_kernel");
  }
  void add_rows(const float* x, const float* row, float* out, int64_t rows,
                int64_t cols) const override {
    if (rows * cols == 0) return;
    add_rows_kernel<<<blocks_for(rows * cols), kThreads>>>(x, row, out, rows, cols);
    check_launch("add_rows_kernel");
  }
  void broadcast_rows(const float* row, float* out, int64_t rows, int64_t cols) const override {
    if (rows * cols == 0) return;
    broadcast_rows_kernel<<<blocks_for(rows * cols), kThreads>>>(row, out, rows, cols);
    check_launch("broadcast_rows_kernel");
  }
  void sum_rows(const float* x, float* out, int64_t rows, int64_t cols) const override {
    if (cols == 0) return;
    sum_rows_kernel<<<blocks_for(cols), kThreads>>>(x, out, rows, cols);
    check_launch("sum_rows_kernel");
  }
  void sum(const float* x, float* out, int64_t count) const override {
    sum_kernel<<<1, kThreads>>>(x, out, count);
    check_launch("sum_kernel");
  }
  void broadcast_scalar(const float* scalar, float scale, float* out,
                        int64_t count) const override {
    if (count == 0) return;
    broadcast_scalar_kernel<<<blocks_for(count), kThreads>>>(scalar, scale, out, count);
    check_launch("broadcast_scalar_kernel");
  }
  void transpose(const float* x, float* out, int64_t rows, int64_t cols) const override {
    if (rows * cols == 0) return;
    transpose_kernel<<<blocks_for(rows * cols), kThreads>>>(x, out, rows, cols);
    check_launch("transpose_kernel");
  }
  void softmax_forward(const float* x, float* out, int64_t rows, int64_t cols) const override {
    if (rows == 0) return;
    softmax_kernel<<<blocks_for(rows), kThreads>>>(x, out, rows, cols, false);
    check_launch("softmax_kernel");
  }
  void log_softmax_forward(const float* x, float* out, int64_t rows, int64_t cols) const override {
    if (rows == 0) return;
    softmax_kernel<<<blocks_for(rows), kThreads>>>(x, out, rows, cols, true);
    check_launch("softmax_kernel");
  }
  void log_softmax_backward(const float* grad_out, const float* out, float* grad_in, int64_t rows,
                            int64_t cols) const override {
    if (rows == 0) return;
    log_softmax_backward_kernel<<<blocks_for(rows), kThreads>>>(grad_out, out, grad_in, rows, cols);
    check_launch("log_softmax_backward_kernel");
  }
  void nll_loss_forward(const float* logp, const float* targets, float* loss, int64_t rows,
                        int64_t cols) const override {
    nll_loss_forward_kernel<<<1, kThreads>>>(logp, targets, loss, rows, cols);
    check_launch("nll_loss_forward_kernel");
  }
  void nll_loss_backward(const float* grad_loss, const float* targets, float* grad_logp,
                         int64_t rows, int64_t cols) const override {
    fill(grad_logp, 0.0f, rows * cols);
    if (rows == 0) return;
    nll_loss_backward_kernel<<<blocks_for(rows), kThreads>>>(grad_loss, targets, grad_logp, rows,
                                                             cols);
    check_launch("nll_loss_backward_kernel");
  }
  void argmax_rows(const float* x, float* out, int64_t rows, int64_t cols) const override {
    if (rows == 0) return;
    argmax_rows_kernel<<<blocks_for(rows), kThreads>>>(x, out, rows, cols);
    check_launch("argmax_rows_kernel");
  }

 private:
  static size_t bytes(int64_t count) { return static_cast<size_t>(count) * sizeof(float); }
};

}  // namespace

const Kernels& cuda_kernels() {
  static const CudaKernels kernels;
  return kernels;
}

bool cuda_device_present() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace course
