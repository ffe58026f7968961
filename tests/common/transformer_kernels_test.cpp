// transformer_kernels_test.cpp: the kernels of common/tensor/transformer_kernels.h.
// Every forward against a direct double computation of its formula, every backward
// against double-precision central differences of L = sum_k w_k y_k (w index-dependent,
// so every output element counts differently) within 1e-6 relative, and the float
// instantiations against the double ones. Shapes are not powers of two; inputs depend on
// the index and take both signs.
//
//   ctest -L common     or     ./build/solutions/test_common --gtest_filter='TransformerKernels*'
#include "transformer_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "error.h"

namespace course {
namespace {

using Vec = std::vector<double>;

// Index-dependent values of both signs, of order 1, no two neighbours equal.
Vec values(size_t n, double salt) {
  Vec v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = std::sin(0.7 * static_cast<double>(i) + salt) + 0.1 * static_cast<double>(i % 3);
  }
  return v;
}

std::vector<float> to_float(const Vec& v) {
  return {v.begin(), v.end()};
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// dL/dx by central differences, L = dot(w, f()), where f reads x (perturbed in place).
Vec numeric_grad(const std::function<Vec()>& f, Vec& x, const Vec& w) {
  constexpr double kStep = 1e-5;  // error O(h²) ~ 1e-11, rounding ~ 1e-16 |L| / h ~ 1e-10
  Vec g(x.size());
  for (size_t j = 0; j < x.size(); ++j) {
    const double saved = x[j];
    x[j] = saved + kStep;
    const double plus = dot(w, f());
    x[j] = saved - kStep;
    const double minus = dot(w, f());
    x[j] = saved;
    g[j] = (plus - minus) / (2 * kStep);
  }
  return g;
}

// 1e-6 relative, and 1e-9 absolute for the entries that are (close to) zero.
void expect_grad_near(const Vec& analytic, const Vec& numeric, const std::string& what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  for (size_t j = 0; j < numeric.size(); ++j) {
    EXPECT_NEAR(analytic[j], numeric[j], 1e-6 * std::abs(numeric[j]) + 1e-9)
        << what << ", element " << j;
  }
}

void expect_vec_near(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < want.size(); ++j) {
    EXPECT_NEAR(got[j], want[j], tol * (1 + std::abs(want[j]))) << what << ", element " << j;
  }
}

void expect_float_near(const std::vector<float>& got, const Vec& want, const std::string& what) {
  expect_vec_near(Vec(got.begin(), got.end()), want, 1e-5, what + " (float)");
}

// ---- LayerNorm -----------------------------------------------------------------------

constexpr double kEps = 1e-5;

Vec layernorm_direct(const Vec& x, const Vec& w, const Vec& b, int64_t rows, int64_t cols) {
  Vec y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) m += x[r * cols + c] / static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c) {
      v += (x[r * cols + c] - m) * (x[r * cols + c] - m) / static_cast<double>(cols);
    }
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = (x[r * cols + c] - m) / std::sqrt(v + kEps) * w[c] + b[c];
    }
  }
  return y;
}

TEST(TransformerKernels, LayernormForwardMatchesTheFormula) {
  for (auto size : {std::pair<int64_t, int64_t>{1, 1}, {5, 7}, {3, 48}}) {
    const int64_t rows = size.first, cols = size.second;
    const size_t n = static_cast<size_t>(rows * cols);
    Vec x = values(n, 0.3), w = values(cols, 1.1), b = values(cols, 2.0);
    for (double& v : x) v = 3 * v + 5;  // a mean far from 0 and a spread that is not 1
    Vec y(n), mean(rows), rstd(rows);
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, cols,
                      kEps);
    const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    expect_vec_near(y, layernorm_direct(x, w, b, rows, cols), 1e-12, "layernorm " + shape);
    // mean and rstd as the backward reads them: normalising with them gives y again.
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(r * cols + c);
        EXPECT_NEAR((x[i] - mean[r]) * rstd[r] * w[c] + b[c], y[i], 1e-12) << shape;
      }
    }
    std::vector<float> yf(n), mf(rows), sf(rows);
    layernorm_forward(yf.data(), mf.data(), sf.data(), to_float(x).data(), to_float(w).data(),
                      to_float(b).data(), rows, cols, kEps);
    expect_float_near(yf, y, "layernorm " + shape);
    expect_float_near(sf, rstd, "layernorm rstd " + shape);
    // Without a backward, mean and rstd may be skipped.
    layernorm_forward<float>(yf.data(), nullptr, nullptr, to_float(x).data(), to_float(w).data(),
                             to_float(b).data(), rows, cols, kEps);
    expect_float_near(yf, y, "layernorm without mean and rstd " + shape);
  }
}

TEST(TransformerKernels, LayernormBackwardMatchesCentralDifferences) {
  for (auto size : {std::pair<int64_t, int64_t>{1, 3}, {3, 5}, {4, 13}}) {
    const int64_t rows = size.first, cols = size.second;
    const size_t n = static_cast<size_t>(rows * cols);
    Vec x = values(n, 0.5), w = values(cols, 1.7), b = values(cols, 2.9);
    const Vec dout = values(n, 4.1);
    auto forward = [&] {
      Vec y(n);
      layernorm_forward<double>(y.data(), nullptr, nullptr, x.data(), w.data(), b.data(), rows,
                                cols, kEps);
      return y;
    };
    Vec y(n), mean(rows), rstd(rows);
    layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows, cols,
                      kEps);
    // dx is overwritten (start from garbage); dweight and dbias accumulate (start from 1, 2, ...).
    Vec dx(n, 1e3), dw(cols), db(cols);
    for (int64_t c = 0; c < cols; ++c) {
      dw[c] = static_cast<double>(c + 1);
      db[c] = -static_cast<double>(c + 1);
    }
    layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                       mean.data(), rstd.data(), rows, cols);
    for (int64_t c = 0; c < cols; ++c) {
      dw[c] -= static_cast<double>(c + 1);
      db[c] += static_cast<double>(c + 1);
    }
    const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
    expect_grad_near(dx, numeric_grad(forward, x, dout), "layernorm dx " + shape);
    expect_grad_near(dw, numeric_grad(forward, w, dout), "layernorm dweight " + shape);
    expect_grad_near(db, numeric_grad(forward, b, dout), "layernorm dbias " + shape);

    // float against double, each gradient skippable on its own.
    std::vector<float> dxf(n), dwf(cols, 0.0f), mf(rows), sf(rows), yf(n);
    layernorm_forward(yf.data(), mf.data(), sf.data(), to_float(x).data(), to_float(w).data(),
                      to_float(b).data(), rows, cols, kEps);
    layernorm_backward<float>(dxf.data(), dwf.data(), nullptr, to_float(dout).data(),
                              to_float(x).data(), to_float(w).data(), mf.data(), sf.data(), rows,
                              cols);
    expect_float_near(dxf, dx, "layernorm dx " + shape);
    expect_float_near(dwf, dw, "layernorm dweight " + shape);
  }
}

// ---- GELU ----------------------------------------------------------------------------

TEST(TransformerKernels, GeluIsTheTanhFormAndItsBackwardMatchesCentralDifferences) {
  const size_t n = 37;
  Vec x = values(n, 0.2);
  for (size_t i = 0; i < n; ++i) x[i] *= 3;  // [-3, 3.2]: both tails and the bend
  Vec y(n);
  gelu_forward(y.data(), x.data(), static_cast<int64_t>(n));
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double tanh_form =
        0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y[i], tanh_form, 1e-14) << "x = " << v;
    EXPECT_NEAR(y[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-3)
        << "exact GELU, x = " << v;
  }
  const Vec dout = values(n, 1.3);
  Vec dx(n, 1e3);
  gelu_backward(dx.data(), dout.data(), x.data(), static_cast<int64_t>(n));
  auto forward = [&] {
    Vec out(n);
    gelu_forward(out.data(), x.data(), static_cast<int64_t>(n));
    return out;
  };
  expect_grad_near(dx, numeric_grad(forward, x, dout), "gelu dx");

  std::vector<float> yf(n), dxf = to_float(dout);
  gelu_forward(yf.data(), to_float(x).data(), static_cast<int64_t>(n));
  gelu_backward(dxf.data(), dxf.data(), to_float(x).data(), static_cast<int64_t>(n));  // in place
  expect_float_near(yf, y, "gelu");
  expect_float_near(dxf, dx, "gelu dx");
}

// ---- Embedding -----------------------------------------------------------------------

TEST(TransformerKernels, EmbeddingGathersRowsAndScatterAddsTheirGradients) {
  const int64_t vocab = 7, dim = 5, n = 9;
  const std::vector<float> ids{3, 0, 6, 3, 1, 3, 5, 0, 2};  // 3 three times, 0 twice, 4 never
  Vec table = values(static_cast<size_t>(vocab * dim), 0.9);
  Vec out(static_cast<size_t>(n * dim));
  embedding_forward(out.data(), ids.data(), table.data(), n, vocab, dim);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < dim; ++c) {
      EXPECT_EQ(out[i * dim + c], table[static_cast<int64_t>(ids[i]) * dim + c]) << i << "," << c;
    }
  }
  const Vec dout = values(out.size(), 2.2);
  Vec dtable(table.size());
  for (size_t j = 0; j < dtable.size(); ++j) dtable[j] = 0.5 * static_cast<double>(j);
  const Vec before = dtable;
  embedding_backward(dtable.data(), ids.data(), dout.data(), n, vocab, dim);
  for (size_t j = 0; j < dtable.size(); ++j) dtable[j] -= before[j];  // accumulated
  auto forward = [&] {
    Vec y(out.size());
    embedding_forward(y.data(), ids.data(), table.data(), n, vocab, dim);
    return y;
  };
  expect_grad_near(dtable, numeric_grad(forward, table, dout), "embedding dtable");
  for (int64_t c = 0; c < dim; ++c) EXPECT_EQ(dtable[4 * dim + c], 0.0) << "unused row 4";
}

TEST(TransformerKernels, EmbeddingRejectsAnIdOutsideTheVocabularyNamingItAndItsPosition) {
  const int64_t vocab = 4, dim = 2;
  const std::vector<float> table(8, 1.0f);
  std::vector<float> out(6), dtable(8, 0.0f);
  for (float bad : {4.0f, -1.0f, 1.5f, std::numeric_limits<float>::quiet_NaN()}) {
    const std::vector<float> ids{0, 3, bad};
    for (bool backward : {false, true}) {
      try {
        if (backward) {
          embedding_backward(dtable.data(), ids.data(), out.data(), 3, vocab, dim);
        } else {
          embedding_forward(out.data(), ids.data(), table.data(), 3, vocab, dim);
        }
        ADD_FAILURE() << "id " << bad << " was accepted";
      } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(backward ? "embedding_backward" : "embedding_forward"),
                  std::string::npos)
            << what;
        EXPECT_NE(what.find("position 2"), std::string::npos) << what;
        EXPECT_NE(what.find("[0, 4)"), std::string::npos) << what;
        if (bad == 4.0f) {
          EXPECT_NE(what.find("id 4 "), std::string::npos) << what;
        }
        if (bad == -1.0f) {
          EXPECT_NE(what.find("id -1 "), std::string::npos) << what;
        }
      }
    }
    EXPECT_EQ(dtable, std::vector<float>(8, 0.0f)) << "a bad id must leave dtable untouched";
  }
}

// ---- Batched matrix product ----------------------------------------------------------

// c[b] = alpha op(a[b]) op(b[b]) + beta c[b], by the definition.
Vec bmm_direct(bool ta, bool tb, int64_t batch, int64_t m, int64_t n, int64_t k, double alpha,
               const Vec& a, const Vec& b, double beta, const Vec& c) {
  Vec out(c.size());
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double av = ta ? a[(p * k + l) * m + i] : a[(p * m + i) * k + l];
          const double bv = tb ? b[(p * n + j) * k + l] : b[(p * k + l) * n + j];
          s += av * bv;
        }
        const size_t at = static_cast<size_t>((p * m + i) * n + j);
        out[at] = alpha * s + (beta == 0 ? 0.0 : beta * c[at]);
      }
    }
  }
  return out;
}

TEST(TransformerKernels, BmmMatchesTheDefinitionForEveryTransposeAndBeta) {
  const int64_t batch = 3, m = 5, n = 11, k = 6;
  const Vec a = values(static_cast<size_t>(batch * m * k), 0.1);
  const Vec b = values(static_cast<size_t>(batch * k * n), 1.4);
  const Vec c0 = values(static_cast<size_t>(batch * m * n), 2.6);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (double beta : {0.0, 0.5}) {
        const std::string what = std::string("bmm ") + (ta ? "T" : "N") + (tb ? "T" : "N") +
                                 " beta " + std::to_string(beta);
        const Vec want = bmm_direct(ta, tb, batch, m, n, k, 1.5, a, b, beta, c0);
        Vec c = c0;
        if (beta == 0) c.assign(c.size(), std::numeric_limits<double>::quiet_NaN());
        bmm(ta, tb, batch, m, n, k, 1.5, a.data(), b.data(), beta, c.data());
        expect_vec_near(c, want, 1e-13, what);
        std::vector<float> cf = to_float(c0);
        bmm(ta, tb, batch, m, n, k, 1.5f, to_float(a).data(), to_float(b).data(),
            static_cast<float>(beta), cf.data());
        expect_float_near(cf, want, what);
      }
    }
  }
  // k = 0: c = beta c, and beta = 0 clears NaNs.
  Vec c(static_cast<size_t>(batch * m * n), std::numeric_limits<double>::quiet_NaN());
  bmm(false, false, batch, m, n, 0, 1.0, a.data(), b.data(), 0.0, c.data());
  EXPECT_EQ(c, Vec(c.size(), 0.0));
}

// The backward of C = A B is two more bmm calls, dA = dC Bᵀ and dB = Aᵀ dC, as attention
// uses them.
TEST(TransformerKernels, BmmGivesTheGradientsOfABatchedProduct) {
  const int64_t batch = 2, m = 3, n = 7, k = 5;
  Vec a = values(static_cast<size_t>(batch * m * k), 0.4);
  Vec b = values(static_cast<size_t>(batch * k * n), 1.9);
  const Vec dc = values(static_cast<size_t>(batch * m * n), 3.3);
  auto forward = [&] {
    Vec c(dc.size());
    bmm(false, false, batch, m, n, k, 1.0, a.data(), b.data(), 0.0, c.data());
    return c;
  };
  Vec da(a.size()), db(b.size());
  bmm(false, true, batch, m, k, n, 1.0, dc.data(), b.data(), 0.0, da.data());
  bmm(true, false, batch, k, n, m, 1.0, a.data(), dc.data(), 0.0, db.data());
  expect_grad_near(da, numeric_grad(forward, a, dc), "bmm dA");
  expect_grad_near(db, numeric_grad(forward, b, dc), "bmm dB");
}

// ---- Softmax -------------------------------------------------------------------------

TEST(TransformerKernels, SoftmaxMatchesTheFormulaAndTheCausalMaskIsExactlyZero) {
  const int64_t blocks = 3, seq = 7, rows = blocks * seq;
  Vec x = values(static_cast<size_t>(rows * seq), 0.8);
  for (double& v : x) v = 4 * v + 20;  // large: only the max-subtracted form stays exact
  for (bool causal : {false, true}) {
    Vec in = x;
    if (causal) {  // the masked entries are never read
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = r % seq + 1; c < seq; ++c) {
          in[r * seq + c] = std::numeric_limits<double>::quiet_NaN();
        }
      }
    }
    Vec p(x.size());
    softmax_forward(p.data(), in.data(), rows, seq, causal);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t keep = causal ? r % seq + 1 : seq;
      double z = 0;
      for (int64_t c = 0; c < keep; ++c) z += std::exp(x[r * seq + c] - 20);
      for (int64_t c = 0; c < seq; ++c) {
        const double want = c < keep ? std::exp(x[r * seq + c] - 20) / z : 0.0;
        if (c < keep) {
          EXPECT_NEAR(p[r * seq + c], want, 1e-14) << "row " << r << " col " << c;
        } else {
          EXPECT_EQ(p[r * seq + c], 0.0) << "masked row " << r << " col " << c;
        }
      }
    }
    std::vector<float> pf = to_float(in);
    softmax_forward(pf.data(), pf.data(), rows, seq, causal);  // in place
    expect_float_near(pf, p, causal ? "causal softmax" : "softmax");
  }
}

TEST(TransformerKernels, SoftmaxBackwardMatchesCentralDifferences) {
  for (bool causal : {false, true}) {
    const int64_t seq = 5, rows = 2 * seq;
    Vec x = values(static_cast<size_t>(rows * seq), 1.2);
    const Vec dout = values(x.size(), 0.6);
    auto forward = [&] {
      Vec p(x.size());
      softmax_forward(p.data(), x.data(), rows, seq, causal);
      return p;
    };
    const Vec p = forward();
    Vec dx(x.size(), 1e3);
    softmax_backward(dx.data(), dout.data(), p.data(), rows, seq);
    expect_grad_near(dx, numeric_grad(forward, x, dout), causal ? "causal softmax" : "softmax");
    std::vector<float> dxf = to_float(dout);
    softmax_backward(dxf.data(), dxf.data(), to_float(p).data(), rows, seq);  // in place
    expect_float_near(dxf, dx, "softmax dx");
  }
}

TEST(TransformerKernels, CausalSoftmaxRejectsRowsThatAreNotWholeBlocks) {
  std::vector<float> x(7 * 3, 0.5f);
  EXPECT_THROW(softmax_forward(x.data(), x.data(), 7, 3, true), ConfigError);
  EXPECT_NO_THROW(softmax_forward(x.data(), x.data(), 7, 3, false));
}

// ---- Heads ---------------------------------------------------------------------------

TEST(TransformerKernels, SplitAndMergeHeadsArePermutationsAndEachOthersAdjoint) {
  const int64_t batch = 2, seq = 5, heads = 3, d = 4, n = batch * seq * heads * d;
  const Vec x = values(static_cast<size_t>(n), 0.7);
  Vec split(x.size()), back(x.size());
  split_heads(split.data(), x.data(), batch, seq, heads, d);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t s = 0; s < seq; ++s) {
        for (int64_t e = 0; e < d; ++e) {
          EXPECT_EQ(split[((b * heads + h) * seq + s) * d + e],
                    x[(b * seq + s) * heads * d + h * d + e])
              << "b " << b << " h " << h << " s " << s << " e " << e;
        }
      }
    }
  }
  merge_heads(back.data(), split.data(), batch, seq, heads, d);
  EXPECT_EQ(back, x);
  // <split(x), y> = <x, merge(y)>: merge_heads is split_heads' backward, and vice versa.
  const Vec y = values(x.size(), 2.4);
  Vec merged(x.size());
  merge_heads(merged.data(), y.data(), batch, seq, heads, d);
  EXPECT_NEAR(dot(split, y), dot(x, merged), 1e-12);
  std::vector<float> sf(x.size());
  split_heads(sf.data(), to_float(x).data(), batch, seq, heads, d);
  expect_float_near(sf, split, "split_heads");
}

TEST(TransformerKernels, NegativeCountsThrowNamingTheKernel) {
  std::vector<float> buf(4, 1.0f);
  try {
    gelu_forward(buf.data(), buf.data(), -1);
    ADD_FAILURE() << "a count of -1 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_forward"), std::string::npos) << e.what();
  }
  EXPECT_THROW(layernorm_forward(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(),
                                 buf.data(), 1, -2, kEps),
               ConfigError);
  EXPECT_THROW(layernorm_forward(buf.data(), buf.data(), buf.data(), buf.data(), buf.data(),
                                 buf.data(), 1, 4, 0.0),
               ConfigError);
  EXPECT_THROW(bmm(false, false, -1, 1, 1, 1, 1.0f, buf.data(), buf.data(), 0.0f, buf.data()),
               ConfigError);
  EXPECT_THROW(split_heads(buf.data(), buf.data(), 1, 1, -1, 4), ConfigError);
  // Zero counts are no-ops.
  EXPECT_NO_THROW(softmax_forward(buf.data(), buf.data(), 0, 0, true));
  EXPECT_NO_THROW(bmm(false, false, 0, 3, 3, 3, 1.0f, buf.data(), buf.data(), 0.0f, buf.data()));
}

}  // namespace
}  // namespace course
