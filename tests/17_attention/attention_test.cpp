// attention_test.cpp: lesson 17: the four kernels of attention.h against the direct
// computation of attention_self_check.h (double) and against central differences, tiled
// against naive in float from S = 1 to 1024 with blocks that do not divide S, the op
// causal_self_attention through lesson 06's autograd, and the saved-tensor ledger: the
// bytes attention keeps against the formula of attention_op.h, to the byte.
//
//   ./build/solutions/test_17 --gtest_filter='Attention*:SavedTensorLedger*'
#include "attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention_op.h"
#include "attention_self_check.h"
#include "error.h"
#include "ops.h"
#include "saved_tensors.h"

namespace course::test {
namespace {

using Vec = std::vector<double>;

std::string case_name(const AttentionShape& s, const AttentionTiles* tiles = nullptr) {
  std::string name = "S=" + std::to_string(s.seq) + " d=" + std::to_string(s.head_dim) +
                     " n=" + std::to_string(s.batch_heads) + (s.causal ? " causal" : " full");
  if (tiles) {
    name += " blocks " + std::to_string(tiles->block_q) + "x" + std::to_string(tiles->block_k);
  }
  return name;
}

// Largest |got - want| relative to 1 + |want|; NaN (an entry never written) is infinite.
double max_rel_error(const Vec& got, const Vec& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i]));
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst;
}

double max_abs(const std::vector<float>& x) {
  double m = 0;
  for (float e : x) m = std::max(m, std::abs(static_cast<double>(e)));
  return m;
}

// Largest |got - want| over `scale` (float against float; NaN is infinite).
double max_error_over(const std::vector<float>& got, const std::vector<float>& want, double scale) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::abs(static_cast<double>(got[i]) - want[i]);
    worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(worst, e);
  }
  return worst / scale;
}

Vec nans(size_t n) {
  return Vec(n, std::numeric_limits<double>::quiet_NaN());
}

std::vector<float> to_float(const Vec& x) {
  return std::vector<float>(x.begin(), x.end());
}

const AttentionShape kSmallCases[] = {
    {1, 1, 3, true}, {3, 7, 4, true}, {3, 7, 4, false}, {2, 37, 5, true}, {2, 37, 5, false},
};
const AttentionTiles kOddTiles[] = {{8, 5}, {5, 8}, {1, 1}, {64, 64}, {3, 37}};

TEST(AttentionNaive, ForwardMatchesTheDirectComputation) {
  for (const AttentionShape& s : kSmallCases) {
    const Vec q = attention_input(s, 0), k = attention_input(s, 1), v = attention_input(s, 2);
    const AttentionOracle want = attention_oracle_forward(s, q, k, v);
    Vec o = nans(q.size()), p = nans(s.batch_heads * s.seq * s.seq);
    attention_naive_forward(s, q.data(), k.data(), v.data(), o.data(), p.data());
    EXPECT_LT(max_rel_error(p, want.p), 1e-12) << "p, " << case_name(s);
    EXPECT_LT(max_rel_error(o, want.o), 1e-12) << "o, " << case_name(s);
  }
}

TEST(AttentionNaive, BackwardMatchesTheDirectComputation) {
  for (const AttentionShape& s : kSmallCases) {
    const Vec q = attention_input(s, 0), k = attention_input(s, 1), v = attention_input(s, 2),
              dout = attention_input(s, 3);
    const AttentionOracle f = attention_oracle_forward(s, q, k, v);
    const AttentionOracleGrads want = attention_oracle_backward(s, q, k, v, dout);
    Vec dq = nans(q.size()), dk = nans(q.size()), dv = nans(q.size());
    attention_naive_backward(s, q.data(), k.data(), v.data(), f.p.data(), dout.data(), dq.data(),
                             dk.data(), dv.data());
    EXPECT_LT(max_rel_error(dq, want.dq), 1e-12) << "dq, " << case_name(s);
    EXPECT_LT(max_rel_error(dk, want.dk), 1e-12) << "dk, " << case_name(s);
    EXPECT_LT(max_rel_error(dv, want.dv), 1e-12) << "dv, " << case_name(s);
  }
}

// L = sum(o * dout) with o from `forward`; its gradient with respect to q, k and v is the
// backward's from dout. Central differences, h = 1e-5, in double.
template <typename Forward>
void expect_central_differences(const AttentionShape& s, const Vec& q, const Vec& k, const Vec& v,
                                const Vec& dout, const Vec& dq, const Vec& dk, const Vec& dv,
                                Forward forward, const std::string& what) {
  const double h = 1e-5;
  const auto loss = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
    const Vec o = forward(qq, kk, vv);
    double sum = 0;
    for (size_t i = 0; i < o.size(); ++i) sum += o[i] * dout[i];
    return sum;
  };
  const Vec* inputs[] = {&q, &k, &v};
  const Vec* grads[] = {&dq, &dk, &dv};
  const char* names[] = {"dq", "dk", "dv"};
  for (int which = 0; which < 3; ++which) {
    double worst = 0;
    for (size_t i = 0; i < q.size(); ++i) {
      Vec plus = *inputs[which], minus = *inputs[which];
      plus[i] += h;
      minus[i] -= h;
      const Vec* a[] = {&q, &k, &v};
      const Vec* b[] = {&q, &k, &v};
      a[which] = &plus;
      b[which] = &minus;
      const double numeric = (loss(*a[0], *a[1], *a[2]) - loss(*b[0], *b[1], *b[2])) / (2 * h);
      const double analytic = (*grads[which])[i];
      worst = std::max(worst, std::abs(numeric - analytic) / std::max(1e-3, std::abs(numeric)));
    }
    EXPECT_LT(worst, 1e-6) << what << ": " << names[which] << ", " << case_name(s);
  }
}

TEST(AttentionNaive, BackwardMatchesCentralDifferences) {
  for (bool causal : {true, false}) {
    const AttentionShape s{2, 9, 3, causal};
    const Vec q = attention_input(s, 0), k = attention_input(s, 1), v = attention_input(s, 2),
              dout = attention_input(s, 3);
    const auto forward = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
      Vec o(qq.size()), p(s.batch_heads * s.seq * s.seq);
      attention_naive_forward(s, qq.data(), kk.data(), vv.data(), o.data(), p.data());
      return o;
    };
    Vec o(q.size()), p(s.batch_heads * s.seq * s.seq);
    attention_naive_forward(s, q.data(), k.data(), v.data(), o.data(), p.data());
    Vec dq(q.size()), dk(q.size()), dv(q.size());
    attention_naive_backward(s, q.data(), k.data(), v.data(), p.data(), dout.data(), dq.data(),
                             dk.data(), dv.data());
    expect_central_differences(s, q, k, v, dout, dq, dk, dv, forward, "naive");
  }
}

TEST(AttentionTiled, ForwardMatchesTheDirectComputation) {
  for (const AttentionShape& s : kSmallCases) {
    const Vec q = attention_input(s, 0), k = attention_input(s, 1), v = attention_input(s, 2);
    const AttentionOracle want = attention_oracle_forward(s, q, k, v);
    for (const AttentionTiles& t : kOddTiles) {
      Vec o = nans(q.size()), lse = nans(s.batch_heads * s.seq);
      attention_tiled_forward(s, t, q.data(), k.data(), v.data(), o.data(), lse.data());
      EXPECT_LT(max_rel_error(o, want.o), 1e-12) << "o, " << case_name(s, &t);
      EXPECT_LT(max_rel_error(lse, want.lse), 1e-12) << "lse, " << case_name(s, &t);
    }
  }
}

TEST(AttentionTiled, BackwardMatchesTheDirectComputation) {
  for (const AttentionShape& s : kSmallCases) {
    const Vec q = attention_input(s, 0), k = attention_input(s, 1), v = attention_input(s, 2),
              dout = attention_input(s, 3);
    const AttentionOracle f = attention_oracle_forward(s, q, k, v);
    const AttentionOracleGrads want = attention_oracle_backward(s, q, k, v, dout);
    for (const AttentionTiles& t : kOddTiles) {
      Vec dq = nans(q.size()), dk = nans(q.size()), dv = nans(q.size());
      attention_tiled_backward(s, t, q.data(), k.data(), v.data(), f.o.data(), f.lse.data(),
                               dout.data(), dq.data(), dk.data(), dv.data());
      EXPECT_LT(max_rel_error(dq, want.dq), 1e-12) << "dq, " << case_name(s, &t);
      EXPECT_LT(max_rel_error(dk, want.dk), 1e-12) << "dk, " << case_name(s, &t);
      EXPECT_LT(max_rel_error(dv, want.dv), 1e-12) << "dv, " << case_name(s, &t);
    }
  }
}

TEST(AttentionTiled, BackwardMatchesCentralDifferences) {
  const AttentionTiles t{4, 3};
  for (bool causal : {true, false}) {
    const AttentionShape s{2, 9, 3, causal};
    const Vec q = attention_input(s, 0), k = attention_input(s, 1), v = attention_input(s, 2),
              dout = attention_input(s, 3);
    const auto forward = [&](const Vec& qq, const Vec& kk, const Vec& vv) {
      Vec o(qq.size()), lse(s.batch_heads * s.seq);
      attention_tiled_forward(s, t, qq.data(), kk.data(), vv.data(), o.data(), lse.data());
      return o;
    };
    Vec o(q.size()), lse(s.batch_heads * s.seq);
    attention_tiled_forward(s, t, q.data(), k.data(), v.data(), o.data(), lse.data());
    Vec dq(q.size()), dk(q.size()), dv(q.size());
    attention_tiled_backward(s, t, q.data(), k.data(), v.data(), o.data(), lse.data(), dout.data(),
                             dq.data(), dk.data(), dv.data());
    expect_central_differences(s, q, k, v, dout, dq, dk, dv, forward, "tiled");
  }
}

// Float, tiled against naive: S = 1 .. 1024, blocks that do not divide S. Small n and d at
// large S keep the naive S x S affordable.
struct FloatCase {
  AttentionShape shape;
  AttentionTiles tiles;
};
std::vector<FloatCase> float_cases() {
  std::vector<FloatCase> cases;
  for (int64_t seq : {1, 2, 31, 64, 100, 257, 1024}) {
    for (bool causal : {true, false}) {
      const int64_t n = seq >= 257 ? 1 : 3, d = seq >= 257 ? 8 : 16;
      cases.push_back({{n, seq, d, causal}, {32, 32}});
      cases.push_back({{n, seq, d, causal}, {24, 40}});
    }
  }
  return cases;
}
// Of the largest magnitude: 1e-6 up to S = 32, then growing as sqrt(S / 32) (5.7e-6 at
// S = 1024). Both kernels sum S terms in float, in another order, and the rounding of such
// a sum grows as the square root of its length (measured: 5.9e-7 at S = 64, 2.7e-6 at
// S = 1024, about half of what is allowed).
double float_tolerance(int64_t seq) {
  return 1e-6 * std::sqrt(std::max(1.0, static_cast<double>(seq) / 32.0));
}

TEST(AttentionTiled, ForwardMatchesNaiveInFloatUpTo1024) {
  for (const FloatCase& c : float_cases()) {
    const AttentionShape& s = c.shape;
    const std::vector<float> q = to_float(attention_input(s, 0)),
                             k = to_float(attention_input(s, 1)),
                             v = to_float(attention_input(s, 2));
    std::vector<float> naive(q.size()), p(s.batch_heads * s.seq * s.seq), tiled(q.size()),
        lse(s.batch_heads * s.seq);
    attention_naive_forward(s, q.data(), k.data(), v.data(), naive.data(), p.data());
    attention_tiled_forward(s, c.tiles, q.data(), k.data(), v.data(), tiled.data(), lse.data());
    EXPECT_LT(max_error_over(tiled, naive, max_abs(naive)), float_tolerance(s.seq))
        << case_name(s, &c.tiles);
  }
}

TEST(AttentionTiled, BackwardMatchesNaiveInFloatUpTo1024) {
  for (const FloatCase& c : float_cases()) {
    const AttentionShape& s = c.shape;
    const std::vector<float> q = to_float(attention_input(s, 0)),
                             k = to_float(attention_input(s, 1)),
                             v = to_float(attention_input(s, 2)),
                             dout = to_float(attention_input(s, 3));
    const size_t n = q.size();
    std::vector<float> o(n), p(s.batch_heads * s.seq * s.seq), o_tiled(n),
        lse(s.batch_heads * s.seq);
    attention_naive_forward(s, q.data(), k.data(), v.data(), o.data(), p.data());
    attention_tiled_forward(s, c.tiles, q.data(), k.data(), v.data(), o_tiled.data(), lse.data());
    std::vector<float> dq(n), dk(n), dv(n), tq(n), tk(n), tv(n);
    attention_naive_backward(s, q.data(), k.data(), v.data(), p.data(), dout.data(), dq.data(),
                             dk.data(), dv.data());
    attention_tiled_backward(s, c.tiles, q.data(), k.data(), v.data(), o_tiled.data(), lse.data(),
                             dout.data(), tq.data(), tk.data(), tv.data());
    // Relative to the largest entry of the three gradients: at S = 2, dq and dk are sums that
    // nearly cancel, far smaller than the terms whose rounding they carry.
    const double scale = std::max({max_abs(dq), max_abs(dk), max_abs(dv)});
    EXPECT_LT(max_error_over(tq, dq, scale), float_tolerance(s.seq))
        << "dq, " << case_name(s, &c.tiles);
    EXPECT_LT(max_error_over(tk, dk, scale), float_tolerance(s.seq))
        << "dk, " << case_name(s, &c.tiles);
    EXPECT_LT(max_error_over(tv, dv, scale), float_tolerance(s.seq))
        << "dv, " << case_name(s, &c.tiles);
  }
}

TEST(AttentionKernels, RefuseEmptyShapesAndTilesNamingTheFunction) {
  const float x = 0;
  float y = 0;
  const AttentionShape empty{1, 0, 4, true};
  try {
    attention_naive_forward(empty, &x, &x, &x, &y, &y);
    FAIL() << "seq = 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.detail().find("attention_naive_forward: seq = 0"), std::string::npos) << e.detail();
  }
  try {
    attention_tiled_backward(AttentionShape{}, AttentionTiles{4, 0}, &x, &x, &x, &x, &x, &x, &y, &y,
                             &y);
    FAIL() << "block_k = 0 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.detail().find("attention_tiled_backward: block_k = 0"), std::string::npos)
        << e.detail();
  }
}

// ---- The op (attention_op.h) --------------------------------------------------------------

constexpr int64_t kB = 2, kHeads = 3, kSeq = 19, kDim = 4;

Tensor input_tensor(int which) {
  const AttentionShape s{kB * kHeads, kSeq, kDim, true};
  const std::vector<float> x = to_float(attention_input(s, which));
  return Tensor::from_vector({kB, kHeads, kSeq, kDim}, x);
}

TEST(AttentionOp, GradientsThroughAutogradEqualTheKernels) {
  const AttentionShape s{kB * kHeads, kSeq, kDim, true};
  const AttentionTiles tiles{8, 6};
  const Tensor w = input_tensor(3);  // L = sum(o * w): dL/do = w
  for (AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
    Variable q = Variable(input_tensor(0)).set_requires_grad(true);
    Variable k = Variable(input_tensor(1)).set_requires_grad(true);
    Variable v = Variable(input_tensor(2)).set_requires_grad(true);
    Variable o = causal_self_attention(q, k, v, kind, tiles);
    ASSERT_EQ(o.shape(), q.shape());
    ASSERT_TRUE(o.grad_fn());
    EXPECT_EQ(o.grad_fn()->name(), "AttentionBackward");
    sum(o * Variable(w)).backward();

    const size_t n = q.numel();
    std::vector<float> want_o(n), p(s.batch_heads * kSeq * kSeq), lse(s.batch_heads * kSeq), dq(n),
        dk(n), dv(n);
    const float* qd = q.data().data();
    const float* kd = k.data().data();
    const float* vd = v.data().data();
    if (kind == AttentionKind::naive) {
      attention_naive_forward(s, qd, kd, vd, want_o.data(), p.data());
      attention_naive_backward(s, qd, kd, vd, p.data(), w.data(), dq.data(), dk.data(), dv.data());
    } else {
      attention_tiled_forward(s, tiles, qd, kd, vd, want_o.data(), lse.data());
      attention_tiled_backward(s, tiles, qd, kd, vd, want_o.data(), lse.data(), w.data(), dq.data(),
                               dk.data(), dv.data());
    }
    const char* name = attention_kind_name(kind);
    EXPECT_EQ(o.data().to_vector(), want_o) << name;
    EXPECT_EQ(q.grad().to_vector(), dq) << name;
    EXPECT_EQ(k.grad().to_vector(), dk) << name;
    EXPECT_EQ(v.grad().to_vector(), dv) << name;
  }
}

TEST(AttentionOp, ParsesKindsAndRefusesOthersAndMismatchedShapes) {
  EXPECT_EQ(parse_attention_kind("naive"), AttentionKind::naive);
  EXPECT_EQ(parse_attention_kind("tiled"), AttentionKind::tiled);
  EXPECT_STREQ(attention_kind_name(AttentionKind::tiled), "tiled");
  EXPECT_THROW(parse_attention_kind("flash"), ConfigError);
  const Variable q(input_tensor(0));
  const Variable short_k(Tensor::zeros({kB, kHeads, kSeq - 1, kDim}));
  try {
    causal_self_attention(q, short_k, q, AttentionKind::naive);
    FAIL() << "k of another shape accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.detail().find("[2, 3, 18, 4]"), std::string::npos) << e.detail();
  }
}

// ---- The ledger (saved_tensors.h) ---------------------------------------------------------

// Bytes of the saved tensors of `node` that are not of `input_shape`: p or lse, the state
// attention keeps beyond q, k, v (and o).
int64_t bytes_beyond_inputs(const Node& node, const Shape& input_shape) {
  int64_t bytes = 0;
  for (const Tensor& t : node.saved_tensors()) {
    if (t.shape() != input_shape) bytes += t.numel() * 4;
  }
  return bytes;
}

TEST(SavedTensorLedger, AttentionKeepsTheFormulaToTheByte) {
  for (int64_t seq : {1, 19, 64, 100}) {
    for (AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
      const AttentionShape s{kB * kHeads, seq, kDim, true};
      const auto make = [&](int which) {
        return Variable(Tensor::from_vector({kB, kHeads, seq, kDim},
                                            to_float(attention_input(s, which))))
            .set_requires_grad(true);
      };
      const Variable o = causal_self_attention(make(0), make(1), make(2), kind, {16, 16});
      const SavedTensorLedger ledger = saved_tensor_ledger(o);
      const int64_t n = s.batch_heads, qkv = 4 * n * seq * kDim;
      const int64_t formula =
          kind == AttentionKind::naive ? 3 * qkv + 4 * n * seq * seq : 4 * qkv + 4 * n * seq;
      EXPECT_EQ(ledger.bytes_of("AttentionBackward"), formula)
          << attention_kind_name(kind) << " S=" << seq << "\n"
          << ledger.describe();
      EXPECT_EQ(ledger.total_bytes, formula);  // the leaves' AccumulateGrads keep nothing
      EXPECT_EQ(ledger.nodes, 4);              // AttentionBackward and three AccumulateGrads
    }
  }
}

TEST(SavedTensorLedger, TiledKeepsAHundredTimesLessAtS1024) {
  const int64_t seq = 1024, d = 8;
  const AttentionShape s{1, seq, d, true};
  int64_t beyond[2] = {0, 0};
  for (AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
    const auto make = [&](int which) {
      return Variable(Tensor::from_vector({1, 1, seq, d}, to_float(attention_input(s, which))))
          .set_requires_grad(true);
    };
    const Variable o = causal_self_attention(make(0), make(1), make(2), kind);
    beyond[kind == AttentionKind::tiled] = bytes_beyond_inputs(*o.grad_fn(), o.shape());
  }
  EXPECT_EQ(beyond[0], 4 * seq * seq);  // P
  EXPECT_EQ(beyond[1], 4 * seq);        // lse
  EXPECT_GE(beyond[0], 100 * beyond[1]);
}

TEST(SavedTensorLedger, VisitsEachNodeOnceAndCountsASharedTensorOnce) {
  Variable x = Variable(Tensor::from_vector({3}, {0.5f, -1.0f, 2.0f})).set_requires_grad(true);
  Variable y = x * x;  // MulBackward saves x twice: one range
  Variable z = y * x;  // saves y (new) and x (counted already)
  const SavedTensorLedger ledger = saved_tensor_ledger(sum(z));
  EXPECT_EQ(ledger.nodes, 4);  // SumBackward, two MulBackwards, one AccumulateGrad
  EXPECT_EQ(ledger.total_bytes, 2 * 3 * 4);
  ASSERT_EQ(ledger.by_node.size(), 3u);
  EXPECT_EQ(ledger.by_node[0].node, "MulBackward");
  EXPECT_EQ(ledger.by_node[0].count, 2);
  EXPECT_EQ(ledger.by_node[0].tensors, 2);
  EXPECT_EQ(ledger.bytes_of("SumBackward"), 0);
  EXPECT_NE(ledger.describe().find("MulBackward"), std::string::npos);
  EXPECT_EQ(saved_tensor_ledger(x).nodes, 0);  // a leaf has no graph
}

TEST(SavedTensorLedger, WalksAChainOfAHundredThousandNodesWithoutRecursion) {
  Variable x = Variable(Tensor::from_vector({2}, {1.0f, 2.0f})).set_requires_grad(true);
  Variable y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0f;
  const SavedTensorLedger ledger = saved_tensor_ledger(y);
  EXPECT_EQ(ledger.nodes, 100001);
  EXPECT_EQ(ledger.total_bytes, 0);  // ScaleBackward keeps a number, no tensor
}

}  // namespace
}  // namespace course::test
