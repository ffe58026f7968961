// reduce_kernels.h: the elementwise reductions every all-reduce runs, fast.
//
//   reduce_into(dst, src, n, ReduceOp::SUM);   // dst[i] = dst[i] + src[i]
//   scale(data, n, 1.0f / world);              // AVG = SUM, then this
//
// On a CPU ring the reduction runs between two socket transfers of the same bytes, so a
// slow loop shows up directly in the bus bandwidth. These loops are written in fixed
// blocks of 16 floats over __restrict pointers, which GCC and Clang turn into SIMD
// instructions already at -O2; a plain `for (i < n)` loop stays scalar at -O2 with GCC's
// default cost model.
//
// What this is not: a tensor library (tensor_kernels.h is). Float32 only, CPU only.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>

#include "process_group.h"

namespace course {

/// dst[i] = dst[i] (op) src[i] for i < n. AVG reduces as SUM (divide afterwards with
/// scale). REQUIRES: dst and src do not overlap. n == 0 is a no-op.
void reduce_into(float* dst, const float* src, size_t n, ReduceOp op);

/// data[i] *= factor for i < n.
void scale(float* data, size_t n, float factor);

}  // namespace course
