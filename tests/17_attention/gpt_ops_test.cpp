// gpt_ops_test.cpp: lesson 17, the given ops of gpt_ops.h: each forward against a direct
// computation, each backward through lesson 06's gradcheck (float central differences;
// the double-precision check of the formulas is tests/common/transformer_kernels_test.cpp),
// what each node saves, and the shape errors.
//
//   ctest -L lesson17 -R GptOps     or     ./build/solutions/test_17 --gtest_filter='GptOps*'
#include "gpt_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "error.h"
#include "gradcheck.h"
#include "node.h"
#include "ops.h"
#include "tensor.h"

namespace course {
namespace {

using Vars = std::vector<Variable>;

// Values of order 1, both signs, different at every index.
Tensor wavy(const Shape& shape, double phase) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(std::sin(1.3 * static_cast<double>(i) + 0.7 + phase));
  }
  return t;
}

void expect_gradcheck(const std::function<Variable(const Vars&)>& f,
                      const std::vector<Tensor>& inputs) {
  const GradcheckResult r = gradcheck(f, inputs);
  EXPECT_TRUE(r.ok) << r.detail;
}

// The ConfigError `f` throws mentions every one of `parts`.
void expect_config_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(what.find(part), std::string::npos) << "'" << part << "' missing in: " << what;
    }
  }
}

TEST(GptOps, EmbeddingGathersRowsAndItsGradientScatterAdds) {
  const Tensor ids = Tensor::from_vector({2, 3}, {4, 0, 2, 4, 1, 4});  // 4 three times, 3 never
  const Tensor table = wavy({5, 6}, 0.0);
  const Variable out = embedding(ids, Variable(table));
  ASSERT_EQ(out.shape(), (Shape{6, 6}));
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t c = 0; c < 6; ++c) {
      EXPECT_EQ(out.data().data()[i * 6 + c],
                table.data()[static_cast<int64_t>(ids.data()[i]) * 6 + c]);
    }
  }
  expect_gradcheck([&](const Vars& v) { return embedding(ids, v[0]); }, {table});
  expect_gradcheck([&](const Vars& v) { return embedding(ids.reshape({6}), v[0]); }, {table});
}

TEST(GptOps, EmbeddingNodeSavesOnlyTheIds) {
  const Tensor ids = Tensor::from_vector({3}, {1, 0, 1});
  const Variable w = Variable(wavy({2, 4}, 0.5)).set_requires_grad(true);
  const Variable out = embedding(ids, w);
  ASSERT_NE(out.grad_fn(), nullptr);
  EXPECT_EQ(out.grad_fn()->name(), "EmbeddingBackward");
  const std::vector<Tensor> saved = out.grad_fn()->saved_tensors();
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_TRUE(saved[0].shares_storage_with(ids));
}

TEST(GptOps, LayerNormMatchesTheFormulaOverTheLastDimension) {
  const Tensor x = wavy({2, 3, 5}, 0.3), w = wavy({5}, 1.1), b = wavy({5}, 2.3);
  const Variable out = layer_norm(Variable(x), Variable(w), Variable(b));
  ASSERT_EQ(out.shape(), x.shape());
  for (int64_t r = 0; r < 6; ++r) {
    const float* xr = x.data() + r * 5;
    double m = 0, var = 0;
    for (int64_t c = 0; c < 5; ++c) m += xr[c] / 5.0;
    for (int64_t c = 0; c < 5; ++c) var += (xr[c] - m) * (xr[c] - m) / 5.0;
    for (int64_t c = 0; c < 5; ++c) {
      const double want = (xr[c] - m) / std::sqrt(var + 1e-5) * w.data()[c] + b.data()[c];
      EXPECT_NEAR(out.data().data()[r * 5 + c], want, 1e-5) << "row " << r << " col " << c;
    }
  }
}

TEST(GptOps, LayerNormGradcheckForInputWeightAndBias) {
  expect_gradcheck([](const Vars& v) { return layer_norm(v[0], v[1], v[2]); },
                   {wavy({4, 7}, 0.0), wavy({7}, 1.0), wavy({7}, 2.0)});
  expect_gradcheck([](const Vars& v) { return layer_norm(v[0], v[1], v[2]); },
                   {wavy({2, 3, 6}, 0.4), wavy({6}, 1.4), wavy({6}, 2.4)});
}

TEST(GptOps, LayerNormSavesInputWeightAndTheRowStatistics) {
  const Variable x = Variable(wavy({3, 2, 5}, 0.2)).set_requires_grad(true);
  const Variable out = layer_norm(x, Variable(wavy({5}, 1.0)), Variable(wavy({5}, 2.0)));
  EXPECT_EQ(out.grad_fn()->name(), "LayerNormBackward");
  const std::vector<Tensor> saved = out.grad_fn()->saved_tensors();
  ASSERT_EQ(saved.size(), 4u);
  EXPECT_TRUE(saved[0].shares_storage_with(x.data()));
  EXPECT_EQ(saved[2].shape(), (Shape{6}));  // mean, one per row
  EXPECT_EQ(saved[3].shape(), (Shape{6}));  // rstd
  // Only x requires grad: the weight and bias gradients are skipped, x's is still right.
  sum(out).backward();
  EXPECT_EQ(x.grad().shape(), x.shape());
}

TEST(GptOps, GeluIsTheTanhFormAndPassesGradcheck) {
  const Tensor x = wavy({3, 7}, 0.1);
  for (float& v : x.span()) v *= 3.0f;
  const Variable out = gelu(Variable(x));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data()[i];
    const double want = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(out.data().data()[i], want, 1e-6) << "x = " << v;
  }
  expect_gradcheck([](const Vars& v) { return gelu(v[0]); }, {x});
  const Variable xv = Variable(x).set_requires_grad(true);
  const Variable y = gelu(xv);
  EXPECT_EQ(y.grad_fn()->name(), "GeluBackward");
  ASSERT_EQ(y.grad_fn()->saved_tensors().size(), 1u);
}

TEST(GptOps, SplitAndMergeHeadsMoveEveryElementWhereTheShapesSay) {
  const int64_t batch = 2, seq = 3, heads = 4, d = 5;
  const Tensor x = wavy({batch * seq, heads * d}, 0.6);
  const Variable split = split_heads(Variable(x), batch, seq, heads);
  ASSERT_EQ(split.shape(), (Shape{batch, heads, seq, d}));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t s = 0; s < seq; ++s) {
        for (int64_t e = 0; e < d; ++e) {
          EXPECT_EQ(split.data().data()[((b * heads + h) * seq + s) * d + e],
                    x.data()[(b * seq + s) * heads * d + h * d + e]);
        }
      }
    }
  }
  const Variable back = merge_heads(split);
  ASSERT_EQ(back.shape(), x.shape());
  EXPECT_EQ(back.data().to_vector(), x.to_vector());
}

TEST(GptOps, SplitAndMergeHeadsGradcheckAndSaveNothing) {
  expect_gradcheck([](const Vars& v) { return split_heads(v[0], 2, 3, 3); }, {wavy({6, 9}, 0.0)});
  expect_gradcheck([](const Vars& v) { return merge_heads(v[0]); }, {wavy({2, 3, 5, 2}, 0.9)});
  const Variable x = Variable(wavy({6, 9}, 0.3)).set_requires_grad(true);
  const Variable split = split_heads(x, 2, 3, 3);
  EXPECT_EQ(split.grad_fn()->name(), "SplitHeadsBackward");
  EXPECT_TRUE(split.grad_fn()->saved_tensors().empty());
  const Variable merged = merge_heads(split);
  EXPECT_EQ(merged.grad_fn()->name(), "MergeHeadsBackward");
  EXPECT_TRUE(merged.grad_fn()->saved_tensors().empty());
}

TEST(GptOps, ShapeErrorsNameTheOpAndTheShapes) {
  const Variable x(wavy({4, 6}, 0.0));
  expect_config_error([&] { layer_norm(x, Variable(wavy({5}, 0.0)), Variable(wavy({6}, 0.0))); },
                      {"layer_norm", "[4, 6]", "[5]"});
  expect_config_error([&] { split_heads(x, 2, 2, 4); }, {"split_heads", "4 heads", "6"});
  expect_config_error([&] { split_heads(x, 3, 2, 2); }, {"split_heads", "[4, 6]", "B = 3"});
  expect_config_error([&] { merge_heads(x); }, {"merge_heads", "[4, 6]"});
  expect_config_error(
      [&] {
        embedding(Tensor::from_vector({2}, {1, 7}), x);
      },
      {"embedding", "id 7", "position 1", "[0, 4)"});
  expect_config_error([&] { embedding(Tensor::zeros({2}), Variable(wavy({6}, 0.0))); },
                      {"embedding", "[6]"});
}

}  // namespace
}  // namespace course
