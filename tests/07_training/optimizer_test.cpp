// optimizer_test.cpp: lesson 07, SGD and Adam against their documented per-element
// formulas (optimizer.h), evaluated in double in the test, over several steps with
// gradients that change from step to step.
//
//   ./build/solutions/test_07 --gtest_filter='Sgd*:Adam*:Optimizer*'
#include "optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "error.h"
#include "tensor_ops.h"

namespace course {
namespace {

std::vector<float> wavy(int64_t n, double phase) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.7 * i + phase));
  return v;
}

// Two parameters of odd sizes (the vector kernels' remainders), with a gradient for
// step s and parameter k that depends on both.
struct Fixture {
  std::vector<Variable> params{Variable(Tensor::from_vector({3, 3}, wavy(9, 0.1)), true),
                               Variable(Tensor::from_vector({5}, wavy(5, 0.2)), true)};
  static std::vector<float> grad(size_t k, int step, int64_t n) {
    return wavy(n, 1.0 + k + 0.37 * step);
  }
  void set_grads(int step) {
    for (size_t k = 0; k < params.size(); ++k) {
      params[k].set_grad(Tensor::from_vector(params[k].shape(), grad(k, step, params[k].numel())));
    }
  }
};

void expect_params(const std::vector<Variable>& params,
                   const std::vector<std::vector<double>>& want, double tol) {
  for (size_t k = 0; k < params.size(); ++k) {
    const std::vector<float> got = params[k].data().to_vector();
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j], want[k][j], tol) << "parameter " << k << " element " << j;
    }
  }
}

struct SgdCase {
  float momentum, weight_decay;
  bool nesterov;
};

class SgdFormula : public ::testing::TestWithParam<SgdCase> {};

TEST_P(SgdFormula, MatchesTheDocumentedUpdateOverFourSteps) {
  const SgdCase c = GetParam();
  const float lr = 0.1f;
  Fixture f;
  std::vector<std::vector<double>> p, b;
  for (const Variable& v : f.params) {
    const std::vector<float> x = v.data().to_vector();
    p.emplace_back(x.begin(), x.end());
    b.emplace_back(x.size(), 0.0);
  }
  Sgd opt(
      f.params,
      {.lr = lr, .momentum = c.momentum, .weight_decay = c.weight_decay, .nesterov = c.nesterov});
  for (int step = 0; step < 4; ++step) {
    f.set_grads(step);
    const std::vector<float> g0 = f.params[0].grad().to_vector();
    opt.step();
    EXPECT_EQ(f.params[0].grad().to_vector(), g0) << "step() changed a gradient";
    for (size_t k = 0; k < p.size(); ++k) {
      const std::vector<float> g = Fixture::grad(k, step, static_cast<int64_t>(p[k].size()));
      for (size_t j = 0; j < p[k].size(); ++j) {
        double d = g[j] + c.weight_decay * p[k][j];
        if (c.momentum != 0) {
          b[k][j] = c.momentum * b[k][j] + d;
          d = c.nesterov ? d + c.momentum * b[k][j] : b[k][j];
        }
        p[k][j] -= lr * d;
      }
    }
    expect_params(f.params, p, 1e-5);
  }
  EXPECT_EQ(opt.step_count(), 4);
}

INSTANTIATE_TEST_SUITE_P(Variants, SgdFormula,
                         ::testing::Values(SgdCase{0.0f, 0.0f, false}, SgdCase{0.9f, 0.0f, false},
                                           SgdCase{0.0f, 0.01f, false}, SgdCase{0.9f, 0.05f, false},
                                           SgdCase{0.8f, 0.01f, true}));

TEST(Adam, MatchesTheDocumentedUpdateOverFiveSteps) {
  for (float wd : {0.0f, 0.1f}) {
    const AdamOptions o{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.95, .eps = 1e-6, .weight_decay = wd};
    Fixture f;
    std::vector<std::vector<double>> p, m, v;
    for (const Variable& var : f.params) {
      const std::vector<float> x = var.data().to_vector();
      p.emplace_back(x.begin(), x.end());
      m.emplace_back(x.size(), 0.0);
      v.emplace_back(x.size(), 0.0);
    }
    Adam opt(f.params, o);
    for (int step = 0; step < 5; ++step) {
      f.set_grads(step);
      opt.step();
      const double t = step + 1;
      for (size_t k = 0; k < p.size(); ++k) {
        const std::vector<float> g = Fixture::grad(k, step, static_cast<int64_t>(p[k].size()));
        for (size_t j = 0; j < p[k].size(); ++j) {
          const double d = g[j] + wd * p[k][j];
          m[k][j] = o.beta1 * m[k][j] + (1 - o.beta1) * d;
          v[k][j] = o.beta2 * v[k][j] + (1 - o.beta2) * d * d;
          const double mhat = m[k][j] / (1 - std::pow(o.beta1, t));
          const double vhat = v[k][j] / (1 - std::pow(o.beta2, t));
          p[k][j] -= o.lr * mhat / (std::sqrt(vhat) + o.eps);
        }
      }
      expect_params(f.params, p, 2e-5);
    }
  }
}

// torch's betas are doubles: 1 - 0.999 is 0.001 to float's precision, where float's
// 1.0f - 0.999f is 0.99998713 of it. The moments against a double oracle with torch's
// default betas, to a relative 2e-6 (float rounding over three steps; the float
// constant puts every exp_avg_sq 1.3e-5 low).
TEST(Adam, MomentsMatchTorchsDoublePrecisionConstants) {
  const double beta1 = 0.9, beta2 = 0.999;
  Fixture f;
  std::vector<std::vector<double>> m, v;
  for (const Variable& var : f.params) {
    m.emplace_back(static_cast<size_t>(var.numel()), 0.0);
    v.emplace_back(static_cast<size_t>(var.numel()), 0.0);
  }
  Adam opt(f.params, {});
  for (int step = 0; step < 3; ++step) {
    f.set_grads(step);
    opt.step();
    const NamedTensors state = opt.state_tensors();
    for (size_t k = 0; k < m.size(); ++k) {
      const std::vector<float> g = Fixture::grad(k, step, static_cast<int64_t>(m[k].size()));
      std::vector<float> got_m, got_v;
      for (const auto& [name, t] : state) {
        if (name == std::to_string(k) + ".exp_avg") got_m = t.to_vector();
        if (name == std::to_string(k) + ".exp_avg_sq") got_v = t.to_vector();
      }
      ASSERT_EQ(got_m.size(), m[k].size()) << "no exp_avg for parameter " << k;
      ASSERT_EQ(got_v.size(), v[k].size()) << "no exp_avg_sq for parameter " << k;
      for (size_t j = 0; j < m[k].size(); ++j) {
        m[k][j] = beta1 * m[k][j] + (1 - beta1) * g[j];
        v[k][j] = beta2 * v[k][j] + (1 - beta2) * g[j] * g[j];
        ASSERT_NEAR(got_m[j], m[k][j], 2e-6 * std::abs(m[k][j]) + 1e-12)
            << "exp_avg of parameter " << k << " element " << j << " after step " << step + 1
            << " (1 - beta1 computed in float?)";
        ASSERT_NEAR(got_v[j], v[k][j], 2e-6 * v[k][j] + 1e-15)
            << "exp_avg_sq of parameter " << k << " element " << j << " after step " << step + 1
            << " (1 - beta2 computed in float?)";
      }
    }
  }
}

TEST(Optimizer, ParametersWithoutGradientsAreLeftAlone) {
  Fixture f;
  const std::vector<float> before = f.params[1].data().to_vector();
  f.params[0].set_grad(Tensor::full(f.params[0].shape(), 1.0f));
  Sgd sgd(f.params, {.lr = 0.1f, .momentum = 0.9f});
  sgd.step();
  Adam adam(f.params, {});
  adam.step();
  EXPECT_EQ(f.params[1].data().to_vector(), before);
  EXPECT_NE(f.params[0].data().to_vector(), wavy(9, 0.1));
  // No state is created for a parameter that was skipped.
  for (const auto& [name, t] : sgd.state_tensors()) EXPECT_EQ(name.substr(0, 2), "0.");
}

TEST(Optimizer, ZeroGradAndStateRoundTrip) {
  Fixture f;
  Adam a(f.params, {});
  f.set_grads(0);
  a.step();
  f.set_grads(1);
  a.step();
  const NamedTensors state = a.state_tensors();
  EXPECT_EQ(state.size(), 4u);  // exp_avg and exp_avg_sq for two parameters
  Fixture g;
  Adam b(g.params, {});
  b.load_state(state, a.step_count());
  EXPECT_EQ(b.step_count(), 2);
  for (size_t i = 0; i < state.size(); ++i) {
    EXPECT_EQ(b.state_tensors()[i].second.to_vector(), state[i].second.to_vector());
  }
  EXPECT_THROW(b.load_state({{"7.exp_avg", Tensor::zeros({9})}}, 1), ConfigError);
  EXPECT_THROW(b.load_state({{"0.exp_avg", Tensor::zeros({4})}}, 1), ConfigError);
  a.zero_grad();
  for (const Variable& p : f.params) EXPECT_FALSE(p.grad().defined());
}

TEST(Optimizer, BadOptionsAndNonLeavesAreRejected) {
  Fixture f;
  EXPECT_THROW(Sgd(f.params, {.lr = 0.0f}), ConfigError);
  EXPECT_THROW(Sgd(f.params, {.lr = 0.1f, .momentum = -1.0f}), ConfigError);
  EXPECT_THROW(Sgd(f.params, {.lr = 0.1f, .nesterov = true}), ConfigError);
  EXPECT_THROW(Adam(f.params, {.beta2 = 1.0f}), ConfigError);
  EXPECT_THROW(Sgd({Variable(Tensor::zeros({2}))}, {.lr = 0.1f}), ConfigError);
}

}  // namespace
}  // namespace course
