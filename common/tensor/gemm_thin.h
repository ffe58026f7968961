// gemm_thin.h: matrix products whose result has at most 8 columns, on the CPU.
//
// C [m, N] with N <= 8 columns (PowerSGD's M Q and Mᵀ P): BLAS first copies the large
// operand into packed panels, a second pass over memory that costs as much as the product
// itself. gemm_thin reads it once, eight floats at a time: two SSE registers by default,
// one AVX register (with fused multiply-adds) in the clone for CPUs with AVX2 and FMA.
//
// What this is not: a general product. CpuKernels::matmul (tensor_kernels_cpu.cpp) calls it
// for n <= kThinColumns and OpenBLAS otherwise. Tested against naive loops by
// tests/common/tensor_test.cpp (TensorMatmul.ThinResultsMatchNaiveLoops).
#pragma once

#include <cstdint>

namespace course {

/// The widest result gemm_thin computes.
inline constexpr int64_t kThinColumns = 8;

/// C [m, n] = alpha op(a) op(b) + beta C, row-major, op(x) = xᵀ where trans_x.
/// REQUIRES: 1 <= n <= kThinColumns; a is [m, k] ([k, m] when trans_a), b is [k, n]
/// ([n, k] when trans_b); beta == 0 never reads C.
void gemm_thin(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, const float* b, float beta, float* c);

}  // namespace course
