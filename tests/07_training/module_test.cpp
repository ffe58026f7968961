// module_test.cpp: lesson 07, Module (registration order, state dicts), Linear
// (PyTorch's initialisation, the forward pass) and Sequential.
//
//   ./build/solutions/test_07 --gtest_filter='Module*:Linear*'
#include <gtest/gtest.h>

#include <cmath>

#include "error.h"
#include "linear.h"
#include "ops.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course {
namespace {

Tensor wavy(const Shape& shape, float phase = 0.0f) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = static_cast<float>(std::sin(1.1 * i + phase));
  return t;
}

// A module with its own parameters registered between children: the order must be own
// parameters first (as registered), then each child's, as registered.
class Block : public Module {
 public:
  explicit Block(Rng& rng) {
    scale_ = register_parameter("scale", Tensor::full({3}, 1.0f));
    first_ = register_module("first", std::make_shared<Linear>(4, 3, rng));
    register_buffer("steps", Tensor::zeros({1}));
    shift_ = register_parameter("shift", Tensor::zeros({3}));
    second_ = register_module("second", std::make_shared<Linear>(3, 2, rng, /*bias=*/false));
  }
  Variable forward(const Variable& x) override {
    return second_->forward(add(mul(first_->forward(x), Variable(scale_.data())), shift_));
  }
  std::string describe() const override { return "Block"; }

 private:
  Variable scale_, shift_;
  std::shared_ptr<Linear> first_, second_;
};

class Outer : public Module {
 public:
  explicit Outer(Rng& rng) {
    a_ = register_module("a", std::make_shared<Block>(rng));
    head_ = register_parameter("head", Tensor::zeros({2}));
    b_ = register_module("b", std::make_shared<Linear>(2, 2, rng));
  }
  Variable forward(const Variable& x) override { return add(b_->forward(a_->forward(x)), head_); }
  std::string describe() const override { return "Outer"; }

 private:
  std::shared_ptr<Block> a_;
  std::shared_ptr<Linear> b_;
  Variable head_;
};

std::vector<std::string> names(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

TEST(Module, ParametersComeInRegistrationOrderOwnFirstThenChildren) {
  Rng rng(0);
  const Outer m(rng);
  EXPECT_EQ(names(m),
            (std::vector<std::string>{"head", "a.scale", "a.shift", "a.first.weight",
                                      "a.first.bias", "a.second.weight", "b.weight", "b.bias"}));
  const std::vector<Variable> params = m.parameters();
  const auto named = m.named_parameters();
  ASSERT_EQ(params.size(), named.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].impl(), named[i].second.impl()) << i;
    EXPECT_TRUE(params[i].requires_grad());
    EXPECT_TRUE(params[i].is_leaf());
  }
  EXPECT_EQ(m.parameter_count(), 2 + 3 + 3 + 12 + 3 + 6 + 4 + 2);
  EXPECT_EQ(m.named_buffers().size(), 1u);
  EXPECT_EQ(m.named_buffers()[0].first, "a.steps");
}

TEST(Module, SequentialNamesChildrenByPosition) {
  Rng rng(1);
  const auto mlp = make_mlp({5, 4, 3, 2}, rng);
  EXPECT_EQ(mlp->size(), 5u);  // Linear ReLU Linear ReLU Linear
  EXPECT_EQ(names(*mlp), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias",
                                                   "4.weight", "4.bias"}));
  EXPECT_EQ(mlp->parameters()[2].name(), "2.weight");
  EXPECT_NE(mlp->describe().find("(4): Linear(in_features=3, out_features=2, bias=true)"),
            std::string::npos);
  EXPECT_THROW(make_mlp({5}, rng), ConfigError);
}

TEST(Module, RepeatedOrDottedNamesAreRejected) {
  class Bad : public Module {
   public:
    explicit Bad(const std::string& second) {
      register_parameter("w", Tensor::zeros({1}));
      register_parameter(second, Tensor::zeros({1}));
    }
    Variable forward(const Variable& x) override { return x; }
    std::string describe() const override { return "Bad"; }
  };
  EXPECT_THROW(Bad("w"), ConfigError);
  EXPECT_THROW(Bad("a.b"), ConfigError);
  EXPECT_NO_THROW(Bad("v"));
}

TEST(Module, StateDictRoundTripsAndLoadingChecksNamesAndShapes) {
  Rng r1(1), r2(2);
  const auto a = make_mlp({4, 3, 2}, r1);
  const auto b = make_mlp({4, 3, 2}, r2);
  b->load_state_dict(a->state_dict());
  const NamedTensors sa = a->state_dict(), sb = b->state_dict();
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector());
    EXPECT_FALSE(sa[i].second.shares_storage_with(sb[i].second));  // copied, not shared
  }
  const auto other = make_mlp({4, 5, 2}, r1);
  try {
    other->load_state_dict(a->state_dict());
    ADD_FAILURE() << "loading a mis-shaped state did not throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("\"0.weight\" is [3, 4]"), std::string::npos) << e.what();
  }
  NamedTensors extra = a->state_dict();
  extra.emplace_back("optimizer.0.exp_avg", Tensor::zeros({1}));
  EXPECT_THROW(b->load_state_dict(extra), ConfigError);
  EXPECT_NO_THROW(b->load_state_dict(extra, "optimizer."));
  NamedTensors missing = a->state_dict();
  missing.pop_back();
  EXPECT_THROW(b->load_state_dict(missing), ConfigError);
}

TEST(Module, ZeroGradClearsEveryParameter) {
  Rng rng(0);
  const auto mlp = make_mlp({3, 4, 2}, rng);
  sum(mlp->forward(Variable(wavy({5, 3})))).backward();
  for (const Variable& p : mlp->parameters()) EXPECT_TRUE(p.grad().defined());
  mlp->zero_grad(/*set_to_none=*/false);
  for (const Variable& p : mlp->parameters()) {
    EXPECT_EQ(p.grad().to_vector(), std::vector<float>(p.numel(), 0.0f));
  }
  mlp->zero_grad();
  for (const Variable& p : mlp->parameters()) EXPECT_FALSE(p.grad().defined());
}

// PyTorch's nn.Linear init: U(-1/sqrt(in), 1/sqrt(in)) for weight then bias, drawn in
// row-major order from the generator.
TEST(Linear, InitialisationFollowsTheContractDrawForDraw) {
  Rng rng(42), replay(42);
  const Linear fc(7, 5, rng);
  const float bound = 1.0f / std::sqrt(7.0f);
  ASSERT_EQ(fc.weight().shape(), (Shape{5, 7}));
  ASSERT_EQ(fc.bias().shape(), (Shape{5}));
  for (float w : fc.weight().data().span()) EXPECT_EQ(w, replay.uniform(-bound, bound));
  for (float b : fc.bias().data().span()) EXPECT_EQ(b, replay.uniform(-bound, bound));
  EXPECT_EQ(rng.next_u32(), replay.next_u32());  // exactly 40 draws were taken
}

TEST(Linear, InitialisationHasTheUniformStatistics) {
  Rng rng(3);
  const Linear fc(400, 300, rng);
  const float bound = 1.0f / 20.0f;
  double sum = 0, sum_sq = 0;
  for (float w : fc.weight().data().span()) {
    ASSERT_LE(std::fabs(w), bound);
    sum += w;
    sum_sq += static_cast<double>(w) * w;
  }
  const double n = 400.0 * 300.0;
  EXPECT_NEAR(sum / n, 0.0, 3e-4);
  EXPECT_NEAR(sum_sq / n, bound * bound / 3.0, 2e-5);  // the variance of U(-b, b) is b²/3
}

TEST(Linear, ForwardIsXWTransposedPlusB) {
  Rng rng(5);
  Linear fc(4, 3, rng);
  const Tensor x = wavy({6, 4});
  const Variable y = fc.forward(Variable(x));
  ASSERT_EQ(y.shape(), (Shape{6, 3}));
  const float* w = fc.weight().data().data();
  const float* b = fc.bias().data().data();
  for (int64_t i = 0; i < 6; ++i) {
    for (int64_t o = 0; o < 3; ++o) {
      double want = b[o];
      for (int64_t k = 0; k < 4; ++k) want += x.data()[i * 4 + k] * w[o * 4 + k];
      EXPECT_NEAR(y.data().data()[i * 3 + o], want, 1e-5);
    }
  }
  ASSERT_NE(y.grad_fn(), nullptr);
  Linear no_bias(4, 3, rng, /*bias=*/false);
  EXPECT_FALSE(no_bias.bias().defined());
  EXPECT_EQ(no_bias.parameters().size(), 1u);
  EXPECT_THROW(Linear(0, 3, rng), ConfigError);
  EXPECT_THROW(fc.forward(Variable(wavy({6, 5}))), ConfigError);
}

}  // namespace
}  // namespace course
