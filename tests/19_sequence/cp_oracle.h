// cp_oracle.h: lesson 19's tests: the serial oracle of context-parallel attention. The same
// whole-sequence q, k, v (and dout) on every rank, lesson 17's kernels in double on the
// WHOLE sequence, and each rank's tokens (token_positions) cut out of both.
//
//   const WholeAttention whole = whole_attention(/*n=*/3, /*S=*/24, /*d=*/4);
//   const std::vector<float> q = rank_rows(whole.q, whole, positions);   // [n, S/C, d]
//   expect_rows_near(o, whole.o, whole, positions, "o");
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attention.h"

namespace course::test {

/// n problems of [S, d] and the oracle's answers, all in double, [n, S, d] ([n, S] lse).
struct WholeAttention {
  int64_t n = 0, seq = 0, dim = 0;
  std::vector<double> q, k, v, dout;  // inputs
  std::vector<double> o, lse;         // forward
  std::vector<double> dq, dk, dv;     // backward from dout
};

/// Values of order 1 that depend on the problem, the position, the feature and `which`.
inline double whole_value(int64_t problem, int64_t pos, int64_t f, int which) {
  return std::sin(0.37 * static_cast<double>(pos * (which + 2)) + 0.9 * static_cast<double>(f) +
                  0.23 * static_cast<double>(problem * (which + 1)) + which);
}

inline WholeAttention whole_attention(int64_t n, int64_t seq, int64_t dim) {
  WholeAttention w;
  w.n = n;
  w.seq = seq;
  w.dim = dim;
  const auto fill = [&](int which) {
    std::vector<double> x(static_cast<size_t>(n * seq * dim));
    for (int64_t i = 0; i < n * seq * dim; ++i) {
      x[static_cast<size_t>(i)] = whole_value(i / (seq * dim), (i / dim) % seq, i % dim, which);
    }
    return x;
  };
  w.q = fill(0);
  w.k = fill(1);
  w.v = fill(2);
  w.dout = fill(3);
  const AttentionShape shape{n, seq, dim, true};
  w.o.resize(w.q.size());
  w.lse.resize(static_cast<size_t>(n * seq));
  attention_tiled_forward(shape, AttentionTiles{}, w.q.data(), w.k.data(), w.v.data(), w.o.data(),
                          w.lse.data());
  std::vector<double> p(static_cast<size_t>(n * seq * seq)), o(w.q.size());
  attention_naive_forward(shape, w.q.data(), w.k.data(), w.v.data(), o.data(), p.data());
  w.dq.resize(w.q.size());
  w.dk.resize(w.q.size());
  w.dv.resize(w.q.size());
  attention_naive_backward(shape, w.q.data(), w.k.data(), w.v.data(), p.data(), w.dout.data(),
                           w.dq.data(), w.dk.data(), w.dv.data());
  return w;
}

/// The rows of `positions` of a whole [n, S, width] array, in float: [n, S/C, width].
inline std::vector<float> rank_rows(const std::vector<double>& x, int64_t n, int64_t seq,
                                    int64_t width, const std::vector<int64_t>& positions) {
  const auto local = static_cast<int64_t>(positions.size());
  std::vector<float> out(static_cast<size_t>(n * local * width));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < local; ++i) {
      for (int64_t f = 0; f < width; ++f) {
        out[static_cast<size_t>((b * local + i) * width + f)] = static_cast<float>(
            x[static_cast<size_t>((b * seq + positions[static_cast<size_t>(i)]) * width + f)]);
      }
    }
  }
  return out;
}

/// Fails at the first entry of `got` ([n, S/C, width]) off the oracle's rows by more than
/// 1e-5 (1 + |want|), naming the array, the problem and the global position.
inline void expect_rows_near(const std::vector<float>& got, const std::vector<double>& whole,
                             int64_t n, int64_t seq, int64_t width,
                             const std::vector<int64_t>& positions, const std::string& what) {
  const std::vector<float> want = rank_rows(whole, n, seq, width, positions);
  ASSERT_EQ(got.size(), want.size()) << what;
  const auto local = static_cast<int64_t>(positions.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const auto row = static_cast<int64_t>(i) / width;
    ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i])))
        << what << ": problem " << row / local << ", position "
        << positions[static_cast<size_t>(row % local)] << ", feature "
        << static_cast<int64_t>(i) % width;
  }
}

}  // namespace course::test
