// mixed_precision_test.cpp: lesson 18, the given mixed-precision step (mixed_precision.h) on
// a tiny GPT: fp32 is lesson 17's step bit for bit; bf16's forward sees bf16 weights and
// logits (a serial oracle), its gradients are bf16's and AdamW steps the float32 masters;
// fp16 without a scaler flushes small gradients that a scaler of 2^16 keeps; a step that
// overflows is skipped, the optimizer untouched, and the scale backs off.
//
//   ./build/solutions/test_18 --gtest_filter='MixedPrecision*'
#include "mixed_precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "adamw.h"
#include "error.h"
#include "gpt.h"
#include "gpt_training.h"
#include "grad_scaler.h"
#include "ops.h"
#include "precision.h"
#include "rng.h"
#include "tensor_ops.h"

namespace course {
namespace {

constexpr int64_t kVocab = 11;
constexpr int64_t kBatch = 3;
constexpr int64_t kSeq = 8;

GptConfig tiny_config(int64_t layers) {
  GptConfig c;
  c.vocab = kVocab;
  c.context = kSeq;
  c.layers = layers;
  c.heads = 2;
  c.hidden = 8;
  return c;
}

// Token ids that depend on the window, the position and `salt`; each target is the next id.
TokenBatch tiny_batch(int salt) {
  const auto id = [&](int64_t b, int64_t t) {
    return static_cast<float>((3 * b + 5 * t + 7 * salt + (b * t) % 4) % kVocab);
  };
  std::vector<float> inputs, targets;
  for (int64_t b = 0; b < kBatch; ++b) {
    for (int64_t t = 0; t < kSeq; ++t) {
      inputs.push_back(id(b, t));
      targets.push_back(id(b, t + 1));
    }
  }
  return {Tensor::from_vector({kBatch, kSeq}, inputs),
          Tensor::from_vector({kBatch * kSeq}, targets)};
}

// A model and its optimizer as train_gpt makes them; the same seed, the same numbers.
struct TinyGpt {
  Rng rng{7};
  Gpt model;
  std::vector<Variable> params;
  AdamW opt;

  explicit TinyGpt(int64_t layers = 2)
      : model(tiny_config(layers), rng),
        params(model.parameters()),
        opt(params, {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95, .weight_decay = 0.1},
            decay_matrices(params)) {}

  GptStepContext context(const TokenBatch& b, int64_t step, double clip = 1.0) {
    return {.model = model,
            .params = params,
            .optimizer = opt,
            .batch = b,
            .lr = 1e-3 * static_cast<double>(step + 1),
            .clip = clip,
            .step = step};
  }
  Variable param(const std::string& name) const {
    for (const auto& [n, p] : model.named_parameters()) {
      if (n == name) return p;
    }
    throw ConfigError("no parameter " + name);
  }
};

std::vector<std::vector<float>> values(const std::vector<Variable>& params) {
  std::vector<std::vector<float>> v;
  for (const Variable& p : params) v.push_back(p.data().to_vector());
  return v;
}

std::vector<std::vector<float>> state_values(const Optimizer& opt) {
  std::vector<std::vector<float>> v;
  for (const auto& [name, t] : opt.state_tensors()) v.push_back(t.to_vector());
  return v;
}

// Multiplies the parameter `name` by s (a model whose gradients upstream of it are small).
void shrink(const TinyGpt& run, const std::string& name, float s) {
  scale_(run.param(name).data(), s);
}

TEST(MixedPrecisionFp32, IsTheStandardStepBitForBit) {
  TinyGpt standard, mixed;
  for (int64_t step = 0; step < 3; ++step) {
    const TokenBatch b = tiny_batch(static_cast<int>(step));
    const GptStepResult want = standard_gpt_step(standard.context(b, step));
    const GptStepResult got = mixed_precision_step(mixed.context(b, step), {});
    EXPECT_EQ(got.loss, want.loss) << "step " << step;
    EXPECT_EQ(got.grad_norm, want.grad_norm) << "step " << step;
    EXPECT_FALSE(got.skipped);
  }
  EXPECT_EQ(values(mixed.params), values(standard.params));
  EXPECT_EQ(state_values(mixed.opt), state_values(standard.opt));
  EXPECT_EQ(mixed.opt.step_count(), 3);
}

TEST(MixedPrecisionFp32, AScalerIsRefused) {
  TinyGpt run(1);
  GradScaler scaler;
  const TokenBatch b = tiny_batch(0);
  EXPECT_THROW(mixed_precision_step(run.context(b, 0), {.scaler = &scaler}), ConfigError);
}

TEST(MixedPrecisionBf16, TheForwardSeesBf16WeightsAndLogits) {
  TinyGpt fp32, bf16, oracle;
  const TokenBatch b = tiny_batch(1);
  // The serial oracle: every weight rounded to bf16, the forward, the logits rounded.
  for (const Variable& p : oracle.params) round_to_(p.data(), Precision::bf16);
  double expected = 0;
  {
    const NoGradGuard no_grad;
    const Tensor logits = oracle.model.forward(Variable(b.inputs)).data().clone();
    round_to_(logits, Precision::bf16);
    expected = cross_entropy(Variable(logits), b.targets).item();
  }
  const double reference = mixed_precision_step(fp32.context(b, 0), {}).loss;
  const GptStepResult r = mixed_precision_step(bf16.context(b, 0), {.precision = Precision::bf16});
  EXPECT_EQ(r.loss, expected);
  EXPECT_NE(r.loss, reference) << "the bf16 step computed the fp32 loss";
  EXPECT_NEAR(r.loss, reference, 1e-3);
}

TEST(MixedPrecisionBf16, AdamWStepsTheFloat32MastersWithBf16Gradients) {
  TinyGpt run;
  const std::vector<std::vector<float>> masters = values(run.params);
  const TokenBatch b = tiny_batch(2);
  // A cap no gradient reaches: the gradients after the step are the rounded ones.
  const GptStepResult r =
      mixed_precision_step(run.context(b, 0, /*clip=*/1e9), {.precision = Precision::bf16});
  EXPECT_FALSE(r.skipped);
  EXPECT_GT(r.grad_norm, 0);

  // The oracle: AdamW from the float32 masters with the step's gradients.
  std::vector<Variable> fresh;
  int64_t off_bf16 = 0, total = 0;
  for (size_t i = 0; i < run.params.size(); ++i) {
    const Tensor g = run.params[i].grad();
    ASSERT_TRUE(g.defined()) << i;
    for (const float v : g.to_vector()) {
      ASSERT_EQ(v, round_to(v, Precision::bf16)) << "parameter " << i << "'s gradient";
    }
    const Variable p(Tensor::from_vector(run.params[i].shape(), masters[i]), true);
    p.set_grad(g.clone());
    fresh.push_back(p);
    for (const float v : run.params[i].data().to_vector()) {
      off_bf16 += v != round_to(v, Precision::bf16);
      ++total;
    }
  }
  AdamW oracle(fresh, run.opt.options(), decay_matrices(fresh));
  oracle.step();
  EXPECT_EQ(values(run.params), values(fresh));
  EXPECT_GT(off_bf16, total / 2) << "the parameters must be float32 masters, not bf16 copies";
}

TEST(MixedPrecisionBf16, WithoutMasterWeightsASmallUpdateIsLost) {
  // A bf16 weight near 1 moves in steps of 2^-7 (2^-8 below 1): 1e-4 rounds away each time.
  EXPECT_EQ(round_to(1.0f + 1e-4f, Precision::bf16), 1.0f);
  EXPECT_EQ(round_to(1.0f - 1e-4f, Precision::bf16), 1.0f);
  float bf16_weight = 1.0f, master = 1.0f;
  for (int step = 0; step < 100; ++step) {
    bf16_weight = round_to(bf16_weight - 1e-4f, Precision::bf16);
    master -= 1e-4f;
  }
  EXPECT_EQ(bf16_weight, 1.0f) << "the bf16 weight never trains";
  EXPECT_NEAR(master, 0.99f, 1e-5f);
  EXPECT_NE(round_to(master, Precision::bf16), 1.0f) << "the master's copy has moved";

  // In the step: a LayerNorm gain (1) moves by about lr = 1e-3 in its master, a move its
  // bf16 copy cannot hold.
  TinyGpt run(1);
  const TokenBatch b = tiny_batch(3);
  mixed_precision_step(run.context(b, 0), {.precision = Precision::bf16});
  const std::vector<float> gain = run.param("transformer.h.0.ln_1.weight").data().to_vector();
  int moved = 0;
  for (const float v : gain) {
    EXPECT_EQ(round_to(v, Precision::bf16), 1.0f);
    moved += v != 1.0f;
  }
  EXPECT_GT(moved, 0) << "the float32 master keeps what bf16 would lose";
}

TEST(MixedPrecisionFp16, UnscaledFlushesSmallGradientsAndAScalerFlushesFewer) {
  // A model whose output head is 1000 times smaller: every gradient behind it is too.
  TinyGpt unscaled, scaled;
  for (const TinyGpt* r : {&unscaled, &scaled}) shrink(*r, "lm_head.weight", 1e-3f);
  const TokenBatch b = tiny_batch(4);
  FlushCount lost, kept;
  const GptStepResult r0 = mixed_precision_step(unscaled.context(b, 0),
                                                {.precision = Precision::fp16, .flushed = &lost});
  GradScaler scaler;  // 2^16
  const GptStepResult r1 = mixed_precision_step(
      scaled.context(b, 0), {.precision = Precision::fp16, .scaler = &scaler, .flushed = &kept});
  EXPECT_FALSE(r1.skipped);
  EXPECT_EQ(r0.loss, r1.loss) << "the reported loss is the unscaled one";
  EXPECT_GT(lost.nonzero, 0);
  EXPECT_GT(lost.flushed_fraction(), 0.05) << lost.flushed << " of " << lost.nonzero;
  EXPECT_LT(kept.flushed_fraction(), lost.flushed_fraction() / 4)
      << kept.flushed << " of " << kept.nonzero << " against " << lost.flushed << " of "
      << lost.nonzero;
  EXPECT_EQ(kept.overflow, 0);
  EXPECT_EQ(scaler.get_scale(), 65536.0);
  EXPECT_EQ(scaler.growth_tracker(), 1);
}

TEST(MixedPrecisionFp16, AnOverflowingStepIsSkippedAndTheScaleBacksOff) {
  TinyGpt run;
  GradScaler first(GradScalerOptions{.init_scale = 256});
  const GptStepResult clean = mixed_precision_step(
      run.context(tiny_batch(5), 0), {.precision = Precision::fp16, .scaler = &first});
  ASSERT_FALSE(clean.skipped);
  const std::vector<std::vector<float>> params = values(run.params);
  const std::vector<std::vector<float>> state = state_values(run.opt);

  GradScaler huge(GradScalerOptions{.init_scale = 1e38});  // loss x 1e38: fp16 overflows
  const GptStepResult r = mixed_precision_step(run.context(tiny_batch(6), 1),
                                               {.precision = Precision::fp16, .scaler = &huge});
  EXPECT_TRUE(r.skipped);
  EXPECT_EQ(r.grad_norm, 0);
  EXPECT_TRUE(std::isfinite(r.loss));
  EXPECT_LT(r.loss, 2 * std::log(static_cast<double>(kVocab)));
  EXPECT_EQ(values(run.params), params) << "the float32 masters must come back unchanged";
  EXPECT_EQ(state_values(run.opt), state);
  EXPECT_EQ(run.opt.step_count(), 1);
  EXPECT_EQ(huge.get_scale(), 5e37);
  EXPECT_EQ(huge.skipped_steps(), 1);
}

}  // namespace
}  // namespace course
