// attention.cpp: lesson 17, the exercise: naive and tiled (online softmax) attention,
// forward and backward (attention.h has the algorithm in steps and the picture of the tiles).
#include "attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "error.h"

namespace course {

namespace {

// a . b over n entries.
template <typename T>
[[maybe_unused]] T dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += alpha x over n entries.
template <typename T>
[[maybe_unused]] void axpy(T alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// c = 1 / sqrt(d), the scale of every score.
template <typename T>
[[maybe_unused]] T score_scale(int64_t head_dim) {
  return static_cast<T>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

// The last key query i sees: i with causal, S - 1 without.
[[maybe_unused]] int64_t last_key(const AttentionShape& s, int64_t i) {
  return s.causal ? i : s.seq - 1;
}

}  // namespace

template <typename T>
void attention_naive_forward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o,
                             T* p) {
  check_attention_shape(s, "attention_naive_forward");
  // TODO(lesson17): row i: scores c q_i.k_j for j <= last, softmax into p (rest 0), o_i = p_i v
  COURSE_TODO();
}

template <typename T>
void attention_naive_backward(const AttentionShape& s, const T* q, const T* k, const T* v,
                              const T* p, const T* dout, T* dq, T* dk, T* dv) {
  check_attention_shape(s, "attention_naive_backward");
  // TODO(lesson17): row i: dv += p_ij dout_i; dP_ij = dout_i.v_j; ds = p(dP - rowsum(dP p))
  COURSE_TODO();
}

template <typename T>
void attention_tiled_forward(const AttentionShape& s, const AttentionTiles& tiles, const T* q,
                             const T* k, const T* v, T* o, T* lse) {
  check_attention_shape(s, "attention_tiled_forward");
  check_attention_tiles(tiles, "attention_tiled_forward");
  // TODO(lesson17): per query block: m, l, o = 0; per key block: max, rescale, add; o /= l
  COURSE_TODO();
}

template <typename T>
void attention_tiled_backward(const AttentionShape& s, const AttentionTiles& tiles, const T* q,
                              const T* k, const T* v, const T* o, const T* lse, const T* dout,
                              T* dq, T* dk, T* dv) {
  check_attention_shape(s, "attention_tiled_backward");
  check_attention_tiles(tiles, "attention_tiled_backward");
  // TODO(lesson17): D_i = dout_i.o_i; per key block, query block: P from lse, dv, dS, dq, dk
  COURSE_TODO();
}

template void attention_naive_forward<float>(const AttentionShape&, const float*, const float*,
                                             const float*, float*, float*);
template void attention_naive_forward<double>(const AttentionShape&, const double*, const double*,
                                              const double*, double*, double*);
template void attention_naive_backward<float>(const AttentionShape&, const float*, const float*,
                                              const float*, const float*, const float*, float*,
                                              float*, float*);
template void attention_naive_backward<double>(const AttentionShape&, const double*, const double*,
                                               const double*, const double*, const double*, double*,
                                               double*, double*);
template void attention_tiled_forward<float>(const AttentionShape&, const AttentionTiles&,
                                             const float*, const float*, const float*, float*,
                                             float*);
template void attention_tiled_forward<double>(const AttentionShape&, const AttentionTiles&,
                                              const double*, const double*, const double*, double*,
                                              double*);
template void attention_tiled_backward<float>(const AttentionShape&, const AttentionTiles&,
                                              const float*, const float*, const float*,
                                              const float*, const float*, const float*, float*,
                                              float*, float*);
template void attention_tiled_backward<double>(const AttentionShape&, const AttentionTiles&,
                                               const double*, const double*, const double*,
                                               const double*, const double*, const double*, double*,
                                               double*, double*);

}  // namespace course
