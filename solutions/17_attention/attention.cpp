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
T dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// y += alpha x over n entries.
template <typename T>
void axpy(T alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// c = 1 / sqrt(d), the scale of every score.
template <typename T>
T score_scale(int64_t head_dim) {
  return static_cast<T>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

// The last key query i sees: i with causal, S - 1 without.
int64_t last_key(const AttentionShape& s, int64_t i) {
  return s.causal ? i : s.seq - 1;
}

}  // namespace

template <typename T>
void attention_naive_forward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o,
                             T* p) {
  check_attention_shape(s, "attention_naive_forward");
  // BEGIN SOLUTION: row i: scores c q_i.k_j for j <= last, softmax into p (rest 0), o_i = p_i v
  const int64_t seq = s.seq;
  const int64_t d = s.head_dim;
  const T c = score_scale<T>(d);
  for (int64_t b = 0; b < s.batch_heads; ++b) {
    const T* qb = q + b * seq * d;
    const T* kb = k + b * seq * d;
    const T* vb = v + b * seq * d;
    for (int64_t i = 0; i < seq; ++i) {
      T* pi = p + (b * seq + i) * seq;
      T* oi = o + (b * seq + i) * d;
      const int64_t last = last_key(s, i);
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t j = 0; j <= last; ++j) {
        pi[j] = c * dot(qb + i * d, kb + j * d, d);
        max = std::max(max, pi[j]);
      }
      T sum = 0;
      for (int64_t j = 0; j <= last; ++j) {
        pi[j] = std::exp(pi[j] - max);
        sum += pi[j];
      }
      std::fill(pi + last + 1, pi + seq, T(0));
      std::fill(oi, oi + d, T(0));
      for (int64_t j = 0; j <= last; ++j) {
        pi[j] /= sum;
        axpy(pi[j], vb + j * d, oi, d);
      }
    }
  }
  // END SOLUTION
}

template <typename T>
void attention_naive_backward(const AttentionShape& s, const T* q, const T* k, const T* v,
                              const T* p, const T* dout, T* dq, T* dk, T* dv) {
  check_attention_shape(s, "attention_naive_backward");
  // BEGIN SOLUTION: row i: dv += p_ij dout_i; dP_ij = dout_i.v_j; ds = p(dP - rowsum(dP p))
  const int64_t seq = s.seq;
  const int64_t d = s.head_dim;
  const T c = score_scale<T>(d);
  std::fill(dq, dq + s.batch_heads * seq * d, T(0));
  std::fill(dk, dk + s.batch_heads * seq * d, T(0));
  std::fill(dv, dv + s.batch_heads * seq * d, T(0));
  std::vector<T> ds(seq);  // one row of dS at a time
  for (int64_t b = 0; b < s.batch_heads; ++b) {
    const int64_t base = b * seq * d;
    for (int64_t i = 0; i < seq; ++i) {
      const T* pi = p + (b * seq + i) * seq;
      const T* gi = dout + base + i * d;
      const int64_t last = last_key(s, i);
      T rowsum = 0;  // sum_j dP_ij P_ij
      for (int64_t j = 0; j <= last; ++j) {
        axpy(pi[j], gi, dv + base + j * d, d);  // dV = Pᵀ dO
        ds[j] = dot(gi, v + base + j * d, d);   // dP = dO Vᵀ
        rowsum += ds[j] * pi[j];
      }
      for (int64_t j = 0; j <= last; ++j) {
        ds[j] = pi[j] * (ds[j] - rowsum);                         // dS = P (dP - rowsum)
        axpy(c * ds[j], k + base + j * d, dq + base + i * d, d);  // dQ = c dS K
        axpy(c * ds[j], q + base + i * d, dk + base + j * d, d);  // dK = c dSᵀ Q
      }
    }
  }
  // END SOLUTION
}

template <typename T>
void attention_tiled_forward(const AttentionShape& s, const AttentionTiles& tiles, const T* q,
                             const T* k, const T* v, T* o, T* lse) {
  check_attention_shape(s, "attention_tiled_forward");
  check_attention_tiles(tiles, "attention_tiled_forward");
  // BEGIN SOLUTION: per query block: m, l, o = 0; per key block: max, rescale, add; o /= l
  const int64_t seq = s.seq;
  const int64_t d = s.head_dim;
  const int64_t bq = std::min(tiles.block_q, seq);
  const int64_t bk = std::min(tiles.block_k, seq);
  const T c = score_scale<T>(d);
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> scores(bq * bk);  // the tile S_ij, then P~_ij, of one block pair
  std::vector<T> m(bq);            // running maximum of each row of the query block
  std::vector<T> l(bq);            // running sum of exp(S_ij - m_i)
  for (int64_t b = 0; b < s.batch_heads; ++b) {
    const int64_t base = b * seq * d;
    for (int64_t i0 = 0; i0 < seq; i0 += bq) {
      const int64_t rows = std::min(bq, seq - i0);
      std::fill(m.begin(), m.end(), -inf);
      std::fill(l.begin(), l.end(), T(0));
      std::fill(o + base + i0 * d, o + base + (i0 + rows) * d, T(0));
      // Step 2; causal: the key blocks after the query block's last row are skipped.
      const int64_t key_end = s.causal ? i0 + rows : seq;
      for (int64_t j0 = 0; j0 < key_end; j0 += bk) {
        const int64_t cols = std::min(bk, seq - j0);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          T* sr = scores.data() + r * bk;
          T block_max = -inf;
          for (int64_t t = 0; t < cols; ++t) {
            const int64_t j = j0 + t;
            sr[t] = j <= last_key(s, i) ? c * dot(q + base + i * d, k + base + j * d, d) : -inf;
            block_max = std::max(block_max, sr[t]);
          }
          const T m_new = std::max(m[r], block_max);
          if (m_new == -inf) continue;               // every key of this block masked for row i
          const T rescale = std::exp(m[r] - m_new);  // exp(-inf) = 0 on the first block
          T* oi = o + base + i * d;
          for (int64_t e = 0; e < d; ++e) oi[e] *= rescale;
          T sum = 0;
          for (int64_t t = 0; t < cols; ++t) {
            const T pt = std::exp(sr[t] - m_new);  // 0 where masked
            sum += pt;
            axpy(pt, v + base + (j0 + t) * d, oi, d);
          }
          l[r] = rescale * l[r] + sum;
          m[r] = m_new;
        }
      }
      // Step 3.
      for (int64_t r = 0; r < rows; ++r) {
        T* oi = o + base + (i0 + r) * d;
        for (int64_t e = 0; e < d; ++e) oi[e] /= l[r];
        lse[b * seq + i0 + r] = m[r] + std::log(l[r]);
      }
    }
  }
  // END SOLUTION
}

template <typename T>
void attention_tiled_backward(const AttentionShape& s, const AttentionTiles& tiles, const T* q,
                              const T* k, const T* v, const T* o, const T* lse, const T* dout,
                              T* dq, T* dk, T* dv) {
  check_attention_shape(s, "attention_tiled_backward");
  check_attention_tiles(tiles, "attention_tiled_backward");
  // BEGIN SOLUTION: D_i = dout_i.o_i; per key block, query block: P from lse, dv, dS, dq, dk
  const int64_t seq = s.seq;
  const int64_t d = s.head_dim;
  const int64_t bq = std::min(tiles.block_q, seq);
  const int64_t bk = std::min(tiles.block_k, seq);
  const T c = score_scale<T>(d);
  std::fill(dq, dq + s.batch_heads * seq * d, T(0));
  std::fill(dk, dk + s.batch_heads * seq * d, T(0));
  std::fill(dv, dv + s.batch_heads * seq * d, T(0));
  std::vector<T> p(bq * bk);   // P_ij of one block pair, recomputed from lse
  std::vector<T> ds(bq * bk);  // dS_ij of the same pair
  std::vector<T> big_d(seq);   // D_i = dO_i . O_i = sum_j dP_ij P_ij, of one problem
  for (int64_t b = 0; b < s.batch_heads; ++b) {
    const int64_t base = b * seq * d;
    for (int64_t i = 0; i < seq; ++i) {
      big_d[i] = dot(dout + base + i * d, o + base + i * d, d);
    }
    for (int64_t j0 = 0; j0 < seq; j0 += bk) {
      const int64_t cols = std::min(bk, seq - j0);
      // Causal: the query blocks whose last row comes before this key block are skipped.
      for (int64_t i0 = 0; i0 < seq; i0 += bq) {
        const int64_t rows = std::min(bq, seq - i0);
        if (s.causal && i0 + rows - 1 < j0) continue;
        // Step 4 and dS (step 5), row by row of the pair.
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          const T* qi = q + base + i * d;
          const T* gi = dout + base + i * d;
          for (int64_t t = 0; t < cols; ++t) {
            const int64_t j = j0 + t;
            T& pt = p[r * bk + t];
            if (j > last_key(s, i)) {
              pt = 0;
              ds[r * bk + t] = 0;
              continue;
            }
            pt = std::exp(c * dot(qi, k + base + j * d, d) - lse[b * seq + i]);
            ds[r * bk + t] = pt * (dot(gi, v + base + j * d, d) - big_d[i]);
          }
        }
        // Steps 5 and 6: dV_j += P_ij dO_i, dK_j += c dS_ij q_i, dQ_i += c dS_ij k_j.
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          for (int64_t t = 0; t < cols; ++t) {
            const int64_t j = j0 + t;
            axpy(p[r * bk + t], dout + base + i * d, dv + base + j * d, d);
            axpy(c * ds[r * bk + t], q + base + i * d, dk + base + j * d, d);
            axpy(c * ds[r * bk + t], k + base + j * d, dq + base + i * d, d);
          }
        }
      }
    }
  }
  // END SOLUTION
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
