// grad_scaler_test.cpp: lesson 18, the exercise (grad_scaler.h): scale and unscale_ against
// the gradients of a loss whose gradient is known in closed form, inf and NaN found and the
// step skipped with the optimizer untouched, the growth and backoff rules step by step, and
// the errors (unscale_ twice, the floor, bad options).
//
//   ./build/solutions/test_18 --gtest_filter='GradScaler*'
#include "grad_scaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error.h"
#include "ops.h"
#include "optimizer.h"

namespace course {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kLr = 0.5f;

// loss = Σ w0·x0 + Σ w1·x1, so dloss/dw0 = x0 and dloss/dw1 = x1 exactly; `unused` takes
// no part (its gradient stays undefined). Every value depends on its index; x are
// multiples of 1/8, so x times a power of two is exact.
struct Problem {
  Variable w0, w1, unused;
  Tensor x0, x1;

  Problem() {
    std::vector<float> w0v, x0v, w1v, x1v;
    for (int i = 0; i < 6; ++i) {
      w0v.push_back(0.1f * static_cast<float>(i) - 0.3f);
      x0v.push_back(0.25f * static_cast<float>(i + 1) * (i % 2 ? -1.0f : 1.0f));
      w1v.push_back(0.7f - 0.15f * static_cast<float>(i));
      x1v.push_back(0.125f * static_cast<float>(i + 2));
    }
    w0 = Variable(Tensor::from_vector({6}, w0v), true);
    w1 = Variable(Tensor::from_vector({2, 3}, w1v), true);
    unused = Variable(Tensor::from_vector({2}, {1.0f, 2.0f}), true);
    x0 = Tensor::from_vector({6}, x0v);
    x1 = Tensor::from_vector({2, 3}, x1v);
  }
  std::vector<Variable> params() const { return {w0, w1, unused}; }
  Variable loss() const { return sum(w0 * Variable(x0)) + sum(w1 * Variable(x1)); }
};

// One step of grad_scaler.h's loop. A `poison` other than 0 (inf, NaN) is written into
// one element of w1's gradient after backward, as an overflow in backward would leave it.
bool run_step(GradScaler& scaler, const Problem& pr, Optimizer& opt, float poison = 0) {
  opt.zero_grad();
  scaler.scale(pr.loss()).backward();
  if (poison != 0.0f) pr.w1.grad().data()[4] = poison;
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

GradScalerOptions options(double init_scale, int64_t growth_interval = 2000) {
  GradScalerOptions o;
  o.init_scale = init_scale;
  o.growth_interval = growth_interval;
  return o;
}

std::vector<float> scaled(const Tensor& x, float s) {
  std::vector<float> v = x.to_vector();
  for (float& e : v) e *= s;
  return v;
}

TEST(GradScalerScale, MultipliesTheLossAndItsGradientByTheScale) {
  const Problem pr;
  const GradScaler scaler(options(1024));
  const Variable loss = pr.loss();
  const Variable big = scaler.scale(loss);
  EXPECT_EQ(big.item(), loss.item() * 1024.0f);
  big.backward();
  EXPECT_EQ(pr.w0.grad().to_vector(), scaled(pr.x0, 1024));
  EXPECT_EQ(pr.w1.grad().to_vector(), scaled(pr.x1, 1024));
  EXPECT_FALSE(pr.unused.grad().defined());
}

TEST(GradScalerUnscale, DividesEveryDefinedGradientByTheScale) {
  const Problem pr;
  GradScaler scaler(options(1024));
  scaler.scale(pr.loss()).backward();
  EXPECT_FALSE(scaler.unscale_(pr.params()));
  EXPECT_FALSE(scaler.found_inf());
  EXPECT_EQ(pr.w0.grad().to_vector(), pr.x0.to_vector());
  EXPECT_EQ(pr.w1.grad().to_vector(), pr.x1.to_vector());
  EXPECT_FALSE(pr.unused.grad().defined()) << "a parameter without a gradient stays so";

  // A scale that is not a power of two: the true gradients to float32's rounding.
  const Problem other;
  GradScaler odd(options(3000));
  odd.scale(other.loss()).backward();
  odd.unscale_(other.params());
  const std::vector<float> g = other.w1.grad().to_vector(), x = other.x1.to_vector();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], x[i], 1e-6f * std::fabs(x[i]));
}

TEST(GradScalerUnscale, FindsInfAndNanInAnyParameter) {
  for (const float poison : {kInf, -kInf, std::nanf("")}) {
    for (const int which : {0, 1}) {
      const Problem pr;
      GradScaler scaler(options(256));
      scaler.scale(pr.loss()).backward();
      (which == 0 ? pr.w0 : pr.w1).grad().data()[which == 0 ? 5 : 3] = poison;
      EXPECT_TRUE(scaler.unscale_(pr.params())) << poison << " in w" << which;
      EXPECT_TRUE(scaler.found_inf());
    }
  }
  const Problem pr;
  GradScaler scaler(options(256));
  scaler.scale(pr.loss()).backward();
  pr.w1.grad().data()[2] = 3e38f;  // large but finite: no overflow found
  EXPECT_FALSE(scaler.unscale_(pr.params()));
}

TEST(GradScalerStep, AnInfOrNanSkipsTheStepAndLeavesTheOptimizerUntouched) {
  for (const float poison : {kInf, std::nanf("")}) {
    const Problem pr;
    const std::vector<float> w0 = pr.w0.data().to_vector(), w1 = pr.w1.data().to_vector();
    Sgd opt(pr.params(), {.lr = kLr, .momentum = 0.9f});
    GradScaler scaler(options(1024));
    EXPECT_FALSE(run_step(scaler, pr, opt, poison)) << poison;
    EXPECT_EQ(pr.w0.data().to_vector(), w0);
    EXPECT_EQ(pr.w1.data().to_vector(), w1);
    EXPECT_EQ(opt.step_count(), 0);
    EXPECT_TRUE(opt.state_tensors().empty()) << "no momentum buffer may be made";
    EXPECT_EQ(scaler.skipped_steps(), 1);

    EXPECT_TRUE(run_step(scaler, pr, opt)) << "a clean step after the skip steps";
    EXPECT_EQ(opt.step_count(), 1);
    const std::vector<float> got = pr.w0.data().to_vector(), x0 = pr.x0.to_vector();
    for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], w0[i] - kLr * x0[i]);
  }
}

TEST(GradScalerStep, UnscalesOnceWhetherOrNotUnscaleWasCalled) {
  // step() alone unscales: the update is lr times the true gradient, not 1024 times it.
  const Problem pr;
  const std::vector<float> w0 = pr.w0.data().to_vector(), x0 = pr.x0.to_vector();
  Sgd opt(pr.params(), {.lr = kLr});
  GradScaler scaler(options(1024));
  EXPECT_TRUE(run_step(scaler, pr, opt));
  std::vector<float> got = pr.w0.data().to_vector();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], w0[i] - kLr * x0[i]);

  // unscale_ then step: step does not unscale a second time.
  const Problem again;
  Sgd opt2(again.params(), {.lr = kLr});
  GradScaler scaler2(options(1024));
  scaler2.scale(again.loss()).backward();
  scaler2.unscale_(again.params());
  EXPECT_TRUE(scaler2.step(opt2));
  scaler2.update();
  EXPECT_EQ(again.w0.grad().to_vector(), x0);
  got = again.w0.data().to_vector();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], w0[i] - kLr * x0[i]);
}

TEST(GradScalerUpdate, AnInfMultipliesTheScaleByTheBackoffFactor) {
  const Problem pr;
  Sgd opt(pr.params(), {.lr = kLr});
  GradScaler torch_default;
  run_step(torch_default, pr, opt, kInf);
  EXPECT_EQ(torch_default.get_scale(), 32768.0);
  run_step(torch_default, pr, opt, kInf);
  EXPECT_EQ(torch_default.get_scale(), 16384.0);

  GradScalerOptions o = options(1000);
  o.backoff_factor = 0.25;
  GradScaler quarter(o);
  run_step(quarter, pr, opt, std::nanf(""));
  EXPECT_EQ(quarter.get_scale(), 250.0);
  EXPECT_EQ(quarter.growth_tracker(), 0);
}

// The scale after each of the steps, clean ("c") or with an inf ("i").
std::vector<double> scales_after(GradScaler& scaler, const std::string& pattern) {
  const Problem pr;
  Sgd opt(pr.params(), {.lr = 0.01f});
  std::vector<double> scales;
  for (const char step : pattern) {
    run_step(scaler, pr, opt, step == 'i' ? kInf : 0.0f);
    scales.push_back(scaler.get_scale());
  }
  return scales;
}

TEST(GradScalerUpdate, GrowsByTheGrowthFactorExactlyAfterGrowthIntervalCleanSteps) {
  GradScaler scaler(options(8, 3));
  EXPECT_EQ(scales_after(scaler, "ccccccc"), (std::vector<double>{8, 8, 16, 16, 16, 32, 32}));
  EXPECT_EQ(scaler.growth_tracker(), 1);

  GradScalerOptions o = options(8, 1);
  o.growth_factor = 3;
  GradScaler every_step(o);
  EXPECT_EQ(scales_after(every_step, "ccc"), (std::vector<double>{24, 72, 216}));
  EXPECT_EQ(every_step.growth_tracker(), 0);
}

TEST(GradScalerUpdate, AnInfRestartsTheCountOfCleanSteps) {
  GradScaler scaler(options(64, 3));
  // Two clean steps, an inf (tracker back to 0), then three clean steps grow it again.
  EXPECT_EQ(scales_after(scaler, "cciccc"), (std::vector<double>{64, 64, 32, 32, 32, 64}));
  GradScaler tracker(options(64, 3));
  scales_after(tracker, "cci");
  EXPECT_EQ(tracker.growth_tracker(), 0);
  scales_after(tracker, "c");
  EXPECT_EQ(tracker.growth_tracker(), 1);
}

TEST(GradScalerUpdate, CountsStepsAndSkippedStepsInARow) {
  GradScaler scaler(options(1 << 20, 100));
  const Problem pr;
  Sgd opt(pr.params(), {.lr = 0.01f});
  const std::string pattern = "ciiciiic";
  const std::vector<int64_t> in_a_row = {0, 1, 2, 0, 1, 2, 3, 0};
  for (size_t i = 0; i < pattern.size(); ++i) {
    run_step(scaler, pr, opt, pattern[i] == 'i' ? kInf : 0.0f);
    EXPECT_EQ(scaler.skipped_in_a_row(), in_a_row[i]) << "after step " << i;
    EXPECT_EQ(scaler.steps(), static_cast<int64_t>(i) + 1);
  }
  EXPECT_EQ(scaler.steps(), 8);
  EXPECT_EQ(scaler.skipped_steps(), 5);
  EXPECT_EQ(opt.step_count(), 3);
}

TEST(GradScalerUpdate, ScaleCollapseNamesTheStepBelowMinScale) {
  GradScalerOptions o = options(4, 1000);
  o.min_scale = 1;
  GradScaler scaler(o);
  const Problem pr;
  Sgd opt(pr.params(), {.lr = 0.01f});
  run_step(scaler, pr, opt);        // step 0
  run_step(scaler, pr, opt);        // step 1
  run_step(scaler, pr, opt, kInf);  // step 2: 4 -> 2
  run_step(scaler, pr, opt, kInf);  // step 3: 2 -> 1, the floor itself is allowed
  EXPECT_EQ(scaler.get_scale(), 1.0);
  try {
    run_step(scaler, pr, opt, kInf);  // step 4: 1 -> 0.5, below the floor
    FAIL() << "the scale fell to " << scaler.get_scale() << " without ScaleCollapse";
  } catch (const ScaleCollapse& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("step 4"), std::string::npos) << what;
    EXPECT_NE(what.find("3 skipped"), std::string::npos) << what;
  }
}

TEST(GradScalerErrors, UnscaleTwiceInAStepAndUpdateWithoutAStepAreRefused) {
  const Problem pr;
  Sgd opt(pr.params(), {.lr = kLr});
  GradScaler scaler(options(16));
  EXPECT_THROW(scaler.update(), ConfigError) << "update() before any unscale_ or step";
  scaler.scale(pr.loss()).backward();
  scaler.unscale_(pr.params());
  try {
    scaler.unscale_(pr.params());
    FAIL() << "unscale_ twice in one step was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unscale_"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  opt.zero_grad();
  scaler.scale(pr.loss()).backward();
  EXPECT_NO_THROW(scaler.unscale_(pr.params())) << "update() ends the step";
}

TEST(GradScalerErrors, OptionsOutOfRangeAreRefusedByName) {
  const auto refused = [](const char* name, auto set) {
    GradScalerOptions o;
    set(o);
    try {
      GradScaler s(o);
      ADD_FAILURE() << name << " out of range was accepted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  refused("init_scale", [](GradScalerOptions& o) { o.init_scale = 0; });
  refused("init_scale", [](GradScalerOptions& o) { o.init_scale = -2; });
  refused("growth_factor", [](GradScalerOptions& o) { o.growth_factor = 1; });
  refused("growth_factor", [](GradScalerOptions& o) { o.growth_factor = 0.5; });
  refused("backoff_factor", [](GradScalerOptions& o) { o.backoff_factor = 1; });
  refused("backoff_factor", [](GradScalerOptions& o) { o.backoff_factor = 0; });
  refused("growth_interval", [](GradScalerOptions& o) { o.growth_interval = 0; });
  refused("min_scale", [](GradScalerOptions& o) { o.min_scale = 0; });
  EXPECT_NO_THROW(GradScaler{});
  EXPECT_EQ(GradScaler{}.get_scale(), 65536.0);
}

}  // namespace
}  // namespace course
