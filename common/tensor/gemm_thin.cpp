// gemm_thin.cpp: see gemm_thin.h.
#include "gemm_thin.h"

#include <cstring>
#include <vector>

namespace course {
namespace {

// C [m, N] with N <= 8 columns (PowerSGD's M Q and Mᵀ P): BLAS first copies the large
// operand into packed panels, a second pass over memory that costs as much as the product
// itself. These loops read it once, eight floats at a time: two SSE registers by default,
// one AVX register (with fused multiply-adds) in the clone for CPUs with AVX2 and FMA.
// bt is op(B)ᵀ: N rows of k floats.

typedef float F8 __attribute__((vector_size(32)));
// Moved with memcpy through references: an F8 is never passed or returned by value, whose
// calling convention would differ between the default code and the AVX clone.
inline void load8(F8& v, const float* p) {
  std::memcpy(&v, p, sizeof v);
}
inline void store8(float* p, const F8& v) {
  std::memcpy(p, &v, sizeof v);
}
inline float sum8(const F8& v) {
  return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

// The result's element ends as alpha * sum (+ beta * what was there; beta 0 never reads it).
inline void finish(float& out, float sum, float alpha, float beta) {
  out = beta == 0.0f ? alpha * sum : alpha * sum + beta * out;
}

// C = alpha a btᵀ + beta C with a [m, k]: each row of a meets the N rows of bt once, with
// N independent sums in registers.
template <int N>
[[gnu::always_inline]] inline void thin_rows(const float* a, const float* bt, int64_t m, int64_t k,
                                             float alpha, float beta, float* c) {
  for (int64_t i = 0; i < m; ++i) {
    const float* row = a + i * k;
    F8 acc[N] = {};
    int64_t p = 0;
    for (; p + 8 <= k; p += 8) {
      F8 x, y;
      load8(x, row + p);
#pragma GCC unroll 8  // the sums stay in registers
      for (int col = 0; col < N; ++col) {
        load8(y, bt + col * k + p);
        acc[col] += x * y;
      }
    }
    for (int col = 0; col < N; ++col) {
      float sum = sum8(acc[col]);
      for (int64_t q = p; q < k; ++q) sum += row[q] * bt[col * k + q];
      finish(c[i * N + col], sum, alpha, beta);
    }
  }
}

// C = alpha aᵀ btᵀ + beta C with a [k, m]: a is read four rows at a time, and each adds its
// multiples into sums (N rows of m, which stay in cache); sums then become C.
template <int N>
[[gnu::always_inline]] inline void thin_columns(const float* a, const float* bt, int64_t m,
                                                int64_t k, float alpha, float beta, float* c,
                                                float* sums) {
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const float* r0 = a + p * m;
    const float* r1 = r0 + m;
    const float* r2 = r1 + m;
    const float* r3 = r2 + m;
    float w[N][4];
    for (int col = 0; col < N; ++col) {
      for (int t = 0; t < 4; ++t) w[col][t] = bt[col * k + p + t];
    }
    int64_t j = 0;
    for (; j + 8 <= m; j += 8) {
      F8 x0, x1, x2, x3, s;
      load8(x0, r0 + j);
      load8(x1, r1 + j);
      load8(x2, r2 + j);
      load8(x3, r3 + j);
#pragma GCC unroll 8
      for (int col = 0; col < N; ++col) {
        load8(s, sums + col * m + j);
        s += w[col][0] * x0 + w[col][1] * x1 + w[col][2] * x2 + w[col][3] * x3;
        store8(sums + col * m + j, s);
      }
    }
    for (; j < m; ++j) {
      for (int col = 0; col < N; ++col) {
        sums[col * m + j] +=
            w[col][0] * r0[j] + w[col][1] * r1[j] + w[col][2] * r2[j] + w[col][3] * r3[j];
      }
    }
  }
  for (; p < k; ++p) {
    const float* r = a + p * m;
    for (int col = 0; col < N; ++col) {
      const float w = bt[col * k + p];
      for (int64_t j = 0; j < m; ++j) sums[col * m + j] += w * r[j];
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    for (int col = 0; col < N; ++col) finish(c[i * N + col], sums[col * m + i], alpha, beta);
  }
}

// The arguments of one thin product; sums: N * m zeros for the transposed case.
struct ThinProduct {
  bool trans_a;
  int64_t m, k;
  float alpha;
  const float* a;
  const float* bt;
  float beta;
  float* c;
  float* sums;
};

template <int N>
[[gnu::always_inline]] inline void thin_gemm(const ThinProduct& t) {
  if (t.trans_a) {
    thin_columns<N>(t.a, t.bt, t.m, t.k, t.alpha, t.beta, t.c, t.sums);
  } else {
    thin_rows<N>(t.a, t.bt, t.m, t.k, t.alpha, t.beta, t.c);
  }
}

template <int N>
void thin_gemm_default(const ThinProduct& t) {
  thin_gemm<N>(t);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COURSE_THIN_AVX2 1
template <int N>
__attribute__((target("avx2,fma"))) void thin_gemm_avx2(const ThinProduct& t) {
  thin_gemm<N>(t);
}
#endif

template <int N>
void thin_gemm_dispatch(const ThinProduct& t) {
#ifdef COURSE_THIN_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx2) return thin_gemm_avx2<N>(t);
#endif
  thin_gemm_default<N>(t);
}

}  // namespace

void gemm_thin(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
               const float* a, const float* b, float beta, float* c) {
  std::vector<float> transposed;
  const float* bt = b;  // op(b)ᵀ is b itself when b is transposed: [n, k]
  if (!trans_b) {       // b is [k, n]
    transposed.resize(static_cast<size_t>(n * k));
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t col = 0; col < n; ++col) transposed[col * k + p] = b[p * n + col];
    }
    bt = transposed.data();
  }
  std::vector<float> sums(trans_a ? static_cast<size_t>(n * m) : 0, 0.0f);
  const ThinProduct t{trans_a, m, k, alpha, a, bt, beta, c, sums.data()};
  switch (n) {
    case 1:
      return thin_gemm_dispatch<1>(t);
    case 2:
      return thin_gemm_dispatch<2>(t);
    case 3:
      return thin_gemm_dispatch<3>(t);
    case 4:
      return thin_gemm_dispatch<4>(t);
    case 5:
      return thin_gemm_dispatch<5>(t);
    case 6:
      return thin_gemm_dispatch<6>(t);
    case 7:
      return thin_gemm_dispatch<7>(t);
    default:
      return thin_gemm_dispatch<8>(t);
  }
}

}  // namespace course
