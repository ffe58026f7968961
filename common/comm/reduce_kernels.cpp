// reduce_kernels.cpp: see reduce_kernels.h.
#include "reduce_kernels.h"

#include "error.h"

namespace course {

namespace {

// Applies `f` to blocks of 16 floats (a fixed trip count the vectoriser always takes),
// then to the tail one by one.
template <typename F>
inline void blocked(float* __restrict dst, const float* __restrict src, size_t n, F f) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) dst[i + j] = f(dst[i + j], src[i + j]);
  }
  for (; i < n; ++i) dst[i] = f(dst[i], src[i]);
}

}  // namespace

void reduce_into(float* __restrict dst, const float* __restrict src, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return blocked(dst, src, n, [](float a, float b) { return a + b; });
    case ReduceOp::PRODUCT:
      return blocked(dst, src, n, [](float a, float b) { return a * b; });
    case ReduceOp::MIN:
      return blocked(dst, src, n, [](float a, float b) { return b < a ? b : a; });
    case ReduceOp::MAX:
      return blocked(dst, src, n, [](float a, float b) { return b > a ? b : a; });
  }
  throw ConfigError("reduce_into: unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

void scale(float* data, size_t n, float factor) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) data[i + j] *= factor;
  }
  for (; i < n; ++i) data[i] *= factor;
}

}  // namespace course
