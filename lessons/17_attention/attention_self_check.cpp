// attention_self_check.cpp: see attention_self_check.h.
#include "attention_self_check.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace course {

const char* const kLesson17SelfCheckPassed =
    "self-check passed: attention_naive_forward, attention_naive_backward, "
    "attention_tiled_forward and attention_tiled_backward match the direct computation";

AttentionOracle attention_oracle_forward(const AttentionShape& s, const std::vector<double>& q,
                                         const std::vector<double>& k,
                                         const std::vector<double>& v) {
  const int64_t n = s.batch_heads, S = s.seq, d = s.head_dim;
  const double c = 1.0 / std::sqrt(static_cast<double>(d));
  AttentionOracle r;
  r.o.assign(n * S * d, 0.0);
  r.p.assign(n * S * S, 0.0);
  r.lse.assign(n * S, 0.0);
  std::vector<double> scores(S * S);
  for (int64_t b = 0; b < n; ++b) {
    const int64_t x = b * S * d;  // problem b's first element in q, k, v, o
    for (int64_t i = 0; i < S; ++i) {
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += q[x + i * d + e] * k[x + j * d + e];
        scores[i * S + j] =
            (s.causal && j > i) ? -std::numeric_limits<double>::infinity() : c * dot;
      }
    }
    for (int64_t i = 0; i < S; ++i) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < S; ++j) max = std::max(max, scores[i * S + j]);
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += std::exp(scores[i * S + j] - max);
      r.lse[b * S + i] = max + std::log(sum);
      for (int64_t j = 0; j < S; ++j) {
        r.p[(b * S + i) * S + j] = std::exp(scores[i * S + j] - r.lse[b * S + i]);
      }
    }
    for (int64_t i = 0; i < S; ++i) {
      for (int64_t e = 0; e < d; ++e) {
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += r.p[(b * S + i) * S + j] * v[x + j * d + e];
        r.o[x + i * d + e] = sum;
      }
    }
  }
  return r;
}

AttentionOracleGrads attention_oracle_backward(const AttentionShape& s,
                                               const std::vector<double>& q,
                                               const std::vector<double>& k,
                                               const std::vector<double>& v,
                                               const std::vector<double>& dout) {
  const int64_t n = s.batch_heads, S = s.seq, d = s.head_dim;
  const double c = 1.0 / std::sqrt(static_cast<double>(d));
  const AttentionOracle f = attention_oracle_forward(s, q, k, v);
  AttentionOracleGrads g;
  g.dq.assign(n * S * d, 0.0);
  g.dk.assign(n * S * d, 0.0);
  g.dv.assign(n * S * d, 0.0);
  std::vector<double> dp(S * S), ds(S * S);
  for (int64_t b = 0; b < n; ++b) {
    const int64_t x = b * S * d;
    const double* p = f.p.data() + b * S * S;
    for (int64_t i = 0; i < S; ++i) {  // dP = dout vᵀ
      for (int64_t j = 0; j < S; ++j) {
        double sum = 0;
        for (int64_t e = 0; e < d; ++e) sum += dout[x + i * d + e] * v[x + j * d + e];
        dp[i * S + j] = sum;
      }
    }
    for (int64_t i = 0; i < S; ++i) {  // dS = p (dP - rowsum(dP p))
      double rowsum = 0;
      for (int64_t j = 0; j < S; ++j) rowsum += dp[i * S + j] * p[i * S + j];
      for (int64_t j = 0; j < S; ++j) ds[i * S + j] = p[i * S + j] * (dp[i * S + j] - rowsum);
    }
    for (int64_t i = 0; i < S; ++i) {
      for (int64_t e = 0; e < d; ++e) {
        double dq = 0, dk = 0, dv = 0;
        for (int64_t j = 0; j < S; ++j) {
          dq += ds[i * S + j] * k[x + j * d + e];    // (dS k)_ie
          dk += ds[j * S + i] * q[x + j * d + e];    // (dSᵀ q)_ie
          dv += p[j * S + i] * dout[x + j * d + e];  // (pᵀ dout)_ie
        }
        g.dq[x + i * d + e] = c * dq;
        g.dk[x + i * d + e] = c * dk;
        g.dv[x + i * d + e] = dv;
      }
    }
  }
  return g;
}

std::vector<double> attention_input(const AttentionShape& s, int which) {
  std::vector<double> x(s.batch_heads * s.seq * s.head_dim);
  for (int64_t b = 0; b < s.batch_heads; ++b) {
    for (int64_t i = 0; i < s.seq; ++i) {
      for (int64_t e = 0; e < s.head_dim; ++e) {
        const double t = 0.37 * static_cast<double>(i) + 1.3 * static_cast<double>(e) +
                         0.71 * static_cast<double>(b) + 2.1 * which;
        x[(b * s.seq + i) * s.head_dim + e] =
            std::sin(t) + 0.25 * std::cos(0.11 * static_cast<double>(i * (which + 2)) + e);
      }
    }
  }
  return x;
}

namespace {

constexpr double kTolerance = 1e-9;  // double kernels against the double oracle

struct Case {
  AttentionShape shape;
  AttentionTiles tiles;
};

std::string case_str(const Case& c, bool tiled) {
  char text[160];
  std::snprintf(text, sizeof(text), "(S = %lld, d = %lld, %s", static_cast<long long>(c.shape.seq),
                static_cast<long long>(c.shape.head_dim), c.shape.causal ? "causal" : "not causal");
  std::string out = text;
  if (tiled) {
    std::snprintf(text, sizeof(text), ", blocks %lld x %lld",
                  static_cast<long long>(c.tiles.block_q), static_cast<long long>(c.tiles.block_k));
    out += text;
  }
  return out + ")";
}

// "" when got equals want within kTolerance everywhere, else where it does not. `cols` is
// the last dimension (d, S or 1) and `rows` the rows of one problem.
std::string compare(const std::string& function, const char* array, const std::vector<double>& got,
                    const std::vector<double>& want, int64_t rows, int64_t cols,
                    const std::string& where) {
  for (size_t idx = 0; idx < want.size(); ++idx) {
    const double diff = std::abs(got[idx] - want[idx]);
    if (!(diff <= kTolerance * (1.0 + std::abs(want[idx])))) {
      const int64_t at = static_cast<int64_t>(idx);
      char text[200];
      std::snprintf(text, sizeof(text),
                    "%.3g (got %.6g, expected %.6g) at [head %lld, row %lld, %s %lld] ", diff,
                    got[idx], want[idx], static_cast<long long>(at / (rows * cols)),
                    static_cast<long long>(at / cols % rows), cols == rows ? "column" : "feature",
                    static_cast<long long>(at % cols));
      return function + ": " + array + " differs from the direct computation by " + text + where;
    }
  }
  return "";
}

std::vector<double> nans(size_t count) {
  return std::vector<double>(count, std::numeric_limits<double>::quiet_NaN());
}

// Each kernel of attention.h on case c against the oracle; "" or the first problem.
std::string check_case(const Case& c) {
  const AttentionShape& s = c.shape;
  const int64_t n = s.batch_heads, S = s.seq, d = s.head_dim;
  const std::vector<double> q = attention_input(s, 0), k = attention_input(s, 1),
                            v = attention_input(s, 2), dout = attention_input(s, 3);
  const AttentionOracle f = attention_oracle_forward(s, q, k, v);
  const AttentionOracleGrads g = attention_oracle_backward(s, q, k, v, dout);
  const std::string naive = case_str(c, false), tiled = case_str(c, true);
  std::string problem;

  std::vector<double> o = nans(n * S * d), p = nans(n * S * S), lse = nans(n * S);
  attention_naive_forward(s, q.data(), k.data(), v.data(), o.data(), p.data());
  const char* fn = "attention_naive_forward";
  if (!(problem = compare(fn, "p", p, f.p, S, S, naive)).empty()) return problem;
  if (!(problem = compare(fn, "o", o, f.o, S, d, naive)).empty()) return problem;

  std::vector<double> dq = nans(n * S * d), dk = nans(n * S * d), dv = nans(n * S * d);
  attention_naive_backward(s, q.data(), k.data(), v.data(), f.p.data(), dout.data(), dq.data(),
                           dk.data(), dv.data());
  fn = "attention_naive_backward";
  if (!(problem = compare(fn, "dv", dv, g.dv, S, d, naive)).empty()) return problem;
  if (!(problem = compare(fn, "dq", dq, g.dq, S, d, naive)).empty()) return problem;
  if (!(problem = compare(fn, "dk", dk, g.dk, S, d, naive)).empty()) return problem;

  o = nans(n * S * d);
  attention_tiled_forward(s, c.tiles, q.data(), k.data(), v.data(), o.data(), lse.data());
  fn = "attention_tiled_forward";
  if (!(problem = compare(fn, "o", o, f.o, S, d, tiled)).empty()) return problem;
  if (!(problem = compare(fn, "lse", lse, f.lse, S, 1, tiled)).empty()) return problem;

  dq = nans(n * S * d);
  dk = nans(n * S * d);
  dv = nans(n * S * d);
  attention_tiled_backward(s, c.tiles, q.data(), k.data(), v.data(), f.o.data(), f.lse.data(),
                           dout.data(), dq.data(), dk.data(), dv.data());
  fn = "attention_tiled_backward";
  if (!(problem = compare(fn, "dv", dv, g.dv, S, d, tiled)).empty()) return problem;
  if (!(problem = compare(fn, "dq", dq, g.dq, S, d, tiled)).empty()) return problem;
  if (!(problem = compare(fn, "dk", dk, g.dk, S, d, tiled)).empty()) return problem;
  return "";
}

}  // namespace

std::string attention_self_check(std::ostream& out) {
  const Case cases[] = {
      {{3, 37, 5, true}, {8, 5}},
      {{3, 37, 5, false}, {8, 5}},
      {{2, 37, 4, true}, {64, 64}},
      {{2, 1, 3, true}, {4, 4}},
  };
  for (const Case& c : cases) {
    std::string problem = check_case(c);
    if (!problem.empty()) return problem;
  }
  const char* what = " match the direct computation at S = 37 (causal and not) and S = 1\n";
  out << "  attention_naive_forward's o and p" << what
      << "  attention_naive_backward's dq, dk and dv" << what
      << "  attention_tiled_forward's o and lse (blocks 8 x 5 and 64 x 64)" << what
      << "  attention_tiled_backward's dq, dk and dv (the same blocks)" << what;
  return "";
}

}  // namespace course
