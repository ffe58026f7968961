// ops_test.cpp: lesson 06, every op's backward formula against central differences
// (gradcheck.h), plus closed forms for the matrix ops and the loss.
//
//   ctest -L lesson06 -R Ops     or     ./build/solutions/test_06 --gtest_filter='Ops*'
#include "ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "error.h"
#include "gradcheck.h"
#include "inputs.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {
namespace {

using test::away_from_zero;
using test::class_targets;
using test::positive;
using test::wavy;
using Vars = std::vector<Variable>;

void expect_gradcheck(const std::function<Variable(const Vars&)>& f,
                      const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(f, inputs);
  EXPECT_TRUE(r.ok) << r.detail;
}

TEST(OpsGradcheck, Add) {
  expect_gradcheck([](const Vars& v) { return add(v[0], v[1]); },
                   {wavy({3, 4}), wavy({3, 4}, 1.0f)});
}

TEST(OpsGradcheck, AddBroadcastsABiasOverRows) {
  expect_gradcheck([](const Vars& v) { return add(v[0], v[1]); }, {wavy({5, 3}), wavy({3}, 2.0f)});
}

TEST(OpsGradcheck, Sub) {
  expect_gradcheck([](const Vars& v) { return sub(v[0], v[1]); },
                   {wavy({2, 5}), wavy({2, 5}, 1.0f)});
}

TEST(OpsGradcheck, Mul) {
  expect_gradcheck([](const Vars& v) { return mul(v[0], v[1]); },
                   {wavy({4, 3}), wavy({4, 3}, 1.0f)});
}

TEST(OpsGradcheck, Div) {
  expect_gradcheck([](const Vars& v) { return div(v[0], v[1]); },
                   {wavy({3, 3}), positive({3, 3}, 1.0f)});
}

TEST(OpsGradcheck, NegAndScale) {
  expect_gradcheck([](const Vars& v) { return neg(v[0]); }, {wavy({7})});
  expect_gradcheck([](const Vars& v) { return scale(v[0], -2.5f); }, {wavy({7})});
}

TEST(OpsGradcheck, Exp) {
  expect_gradcheck([](const Vars& v) { return exp(v[0]); }, {wavy({2, 6})});
}

TEST(OpsGradcheck, Log) {
  expect_gradcheck([](const Vars& v) { return log(v[0]); }, {positive({2, 6})});
}

TEST(OpsGradcheck, Relu) {
  expect_gradcheck([](const Vars& v) { return relu(v[0]); }, {away_from_zero({4, 5})});
}

TEST(OpsGradcheck, MatmulOfNonSquareMatrices) {
  expect_gradcheck([](const Vars& v) { return matmul(v[0], v[1]); },
                   {wavy({3, 4}), wavy({4, 5}, 1.0f)});
}

TEST(OpsGradcheck, LinearWithAndWithoutBias) {
  expect_gradcheck([](const Vars& v) { return linear(v[0], v[1], v[2]); },
                   {wavy({4, 3}), wavy({5, 3}, 1.0f), wavy({5}, 2.0f)});
  expect_gradcheck([](const Vars& v) { return linear(v[0], v[1], Variable()); },
                   {wavy({4, 3}), wavy({2, 3}, 1.0f)});
}

TEST(OpsGradcheck, TransposeAndReshape) {
  expect_gradcheck([](const Vars& v) { return transpose(v[0]); }, {wavy({3, 5})});
  expect_gradcheck([](const Vars& v) { return reshape(v[0], {5, -1}); }, {wavy({3, 5})});
}

TEST(OpsGradcheck, SumAndMean) {
  expect_gradcheck([](const Vars& v) { return sum(v[0]); }, {wavy({3, 4})});
  expect_gradcheck([](const Vars& v) { return mean(v[0]); }, {wavy({3, 4})});
}

TEST(OpsGradcheck, LogSoftmax) {
  expect_gradcheck([](const Vars& v) { return log_softmax(v[0]); }, {wavy({4, 6}, 0.0f, 2.0f)});
}

TEST(OpsGradcheck, NllLossAndCrossEntropy) {
  const Tensor t = class_targets(5, 4);
  expect_gradcheck([&](const Vars& v) { return nll_loss(log_softmax(v[0]), t); }, {wavy({5, 4})});
  expect_gradcheck([&](const Vars& v) { return cross_entropy(v[0], t); }, {wavy({5, 4}, 1.0f)});
}

TEST(OpsGradcheck, TwoLayerNetwork) {
  const Tensor t = class_targets(6, 3);
  expect_gradcheck(
      [&](const Vars& v) {
        return cross_entropy(linear(relu(linear(v[0], v[1], v[2])), v[3], v[4]), t);
      },
      {wavy({6, 4}), wavy({5, 4}, 1.0f, 0.7f), wavy({5}, 2.0f, 0.3f), wavy({3, 5}, 3.0f),
       wavy({3}, 4.0f)});
}

// dA = G Bᵀ and dB = Aᵀ G, from naive loops: catches a transposed or swapped product even
// where the gradient check's tolerance would be generous.
TEST(OpsClosedForm, MatmulGradientsMatchNaiveLoops) {
  const int64_t m = 3, k = 4, n = 2;
  Variable a(wavy({m, k}), true), b(wavy({k, n}, 1.0f), true);
  const Tensor g = wavy({m, n}, 2.0f);
  matmul(a, b).backward(g);
  const float* A = a.data().data();
  const float* B = b.data().data();
  const float* G = g.data();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      double want = 0;
      for (int64_t j = 0; j < n; ++j) want += G[i * n + j] * B[p * n + j];
      EXPECT_NEAR(a.grad().data()[i * k + p], want, 1e-5) << "dA[" << i << "," << p << "]";
    }
  }
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t i = 0; i < m; ++i) want += A[i * k + p] * G[i * n + j];
      EXPECT_NEAR(b.grad().data()[p * n + j], want, 1e-5) << "dB[" << p << "," << j << "]";
    }
  }
}

// d(cross_entropy)/dlogits = (softmax - onehot) / B.
TEST(OpsClosedForm, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  const int64_t rows = 4, classes = 5;
  Variable logits(wavy({rows, classes}, 0.0f, 3.0f), true);
  const Tensor t = class_targets(rows, classes);
  cross_entropy(logits, t).backward();
  const float* x = logits.data().data();
  for (int64_t i = 0; i < rows; ++i) {
    double z = 0;
    for (int64_t j = 0; j < classes; ++j) z += std::exp(x[i * classes + j]);
    for (int64_t j = 0; j < classes; ++j) {
      const double p = std::exp(x[i * classes + j]) / z;
      const double want = (p - (j == static_cast<int64_t>(t.data()[i]) ? 1.0 : 0.0)) / rows;
      EXPECT_NEAR(logits.grad().data()[i * classes + j], want, 1e-6);
    }
  }
}

TEST(OpsClosedForm, BiasGradientIsTheSumOfRows) {
  Variable x(wavy({3, 2})), b(wavy({2}, 1.0f), true);
  const Tensor g = wavy({3, 2}, 2.0f);
  add(x, b).backward(g);
  for (int64_t j = 0; j < 2; ++j) {
    const float want = g.data()[j] + g.data()[2 + j] + g.data()[4 + j];
    EXPECT_NEAR(b.grad().data()[j], want, 1e-6);
  }
}

TEST(Ops, InputsThatNeedNoGradientGetNone) {
  Variable x(wavy({4, 3})), w(wavy({2, 3}, 1.0f), true), b(wavy({2}, 2.0f), true);
  sum(linear(x, w, b)).backward();
  EXPECT_FALSE(x.grad().defined());
  EXPECT_TRUE(w.grad().defined());
  EXPECT_TRUE(b.grad().defined());
}

TEST(Ops, ResultRequiresGradOnlyIfAnInputDoes) {
  Variable a(wavy({2})), b(wavy({2}, 1.0f));
  EXPECT_FALSE(mul(a, b).requires_grad());
  EXPECT_EQ(mul(a, b).grad_fn(), nullptr);
  b.set_requires_grad(true);
  const Variable c = mul(a, b);
  EXPECT_TRUE(c.requires_grad());
  ASSERT_NE(c.grad_fn(), nullptr);
  EXPECT_EQ(c.grad_fn()->name(), "MulBackward");
  EXPECT_FALSE(c.is_leaf());
}

TEST(Ops, ShapeMismatchesAreConfigErrors) {
  Variable a(wavy({2, 3}), true), b(wavy({3, 2}), true);
  EXPECT_THROW(add(a, b), ConfigError);
  EXPECT_THROW(mul(a, b), ConfigError);
  EXPECT_THROW(matmul(a, a), ConfigError);
  EXPECT_THROW(linear(a, a, Variable(wavy({4}))), ConfigError);
  EXPECT_THROW(nll_loss(a, class_targets(3, 3)), ConfigError);
}

}  // namespace
}  // namespace course
