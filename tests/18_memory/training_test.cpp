// training_test.cpp: lesson 18, given: the training run in each precision and policy
// (memory_training.h) on a tiny text, lesson 17's step seam (gpt_training.h), and the
// bench's budget arithmetic (memory_bench.h).
//
//   ./build/solutions/test_18 --gtest_filter='MemoryTraining*:MemoryBench*:GptStepSeam*'
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "../support/tiny_fortunes.h"
#include "activation_ledger.h"
#include "gpt_training.h"
#include "memory_bench.h"
#include "memory_training.h"
#include "text_corpus.h"

namespace course {
namespace {

using test::tiny_fortunes;

MemoryTrainingOptions tiny_options(const std::string& precision, const std::string& recompute) {
  MemoryTrainingOptions o;
  o.steps = 25;
  o.seq_len = 16;
  o.batch_size = 8;
  o.layers = 2;
  o.heads = 2;
  o.hidden = 16;
  o.lr = 1e-2;
  o.eval_every = 0;
  o.eval_batches = 2;
  o.sample = 0;
  o.precision = precision;
  o.recompute = recompute;
  return o;
}

const TextSplit& tiny_split() {
  static const TextSplit text{tiny_fortunes(200, 0), tiny_fortunes(20, 3), 200, 20};
  return text;
}

TEST(GptStepSeam, TheStepSeamRunsEveryStepAndPrepareOnce) {
  GptTrainingOptions o = tiny_options("fp32", "none");
  o.steps = 4;
  int prepared = 0, steps = 0;
  GptTrainingSeams seams;
  seams.prepare = [&prepared](Gpt&) { ++prepared; };
  seams.step = [&steps](const GptStepContext& c) {
    ++steps;
    GptStepResult r = standard_gpt_step(c);
    r.skipped = c.step == 2;  // reported as skipped: counted by the loop
    return r;
  };
  const GptTrainingResult r = train_gpt(o, tiny_split(), nullptr, seams);
  EXPECT_EQ(prepared, 1);
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(r.skipped_steps, 1);
  const GptTrainingResult plain = train_gpt(o, tiny_split(), nullptr);
  EXPECT_EQ(plain.final_loss, r.final_loss) << "standard_gpt_step is lesson 17's step";
}

TEST(MemoryTraining, RecomputationChangesNoNumberOfTraining) {
  const MemoryRunResult none =
      train_in_precision(tiny_options("fp32", "none"), tiny_split(), nullptr);
  for (const char* policy : {"selective", "full"}) {
    const MemoryRunResult r =
        train_in_precision(tiny_options("fp32", policy), tiny_split(), nullptr);
    EXPECT_EQ(r.training.train_losses, none.training.train_losses) << policy;
    EXPECT_EQ(r.training.final_loss, none.training.final_loss) << policy;
  }
}

TEST(MemoryTraining, SixteenBitRunsLearnAndEndNearFloat32) {
  const MemoryRunResult fp32 =
      train_in_precision(tiny_options("fp32", "none"), tiny_split(), nullptr);
  EXPECT_LT(fp32.training.final_loss, fp32.training.initial_loss - 0.5);
  for (const char* precision : {"bf16", "fp16"}) {
    const MemoryRunResult r =
        train_in_precision(tiny_options(precision, "full"), tiny_split(), nullptr);
    EXPECT_NE(r.training.final_loss, fp32.training.final_loss)
        << precision << ": 16-bit rounding must change the numbers";
    EXPECT_NEAR(r.training.final_loss, fp32.training.final_loss, 0.1) << precision;
    EXPECT_EQ(r.training.skipped_steps, 0) << precision;
  }
}

TEST(MemoryTraining, Fp16KeepsTheScalerAndReportsItsScale) {
  MemoryTrainingOptions o = tiny_options("fp16", "none");
  o.growth_interval = 5;
  const MemoryRunResult r = train_in_precision(o, tiny_split(), nullptr);
  // 25 steps at growth interval 5: 2^16 doubled five times when none overflowed; each
  // overflow halves it and restarts the count, so fewer doublings.
  const int64_t skipped = r.training.skipped_steps;
  EXPECT_EQ(std::exp2(std::round(std::log2(r.final_scale))), r.final_scale) << "a power of 2";
  if (skipped == 0) {
    EXPECT_EQ(r.final_scale, 65536.0 * 32);
  } else {
    EXPECT_LT(r.final_scale, 65536.0 * 32) << skipped << " skipped";
  }
  o.loss_scale = "none";
  EXPECT_EQ(train_in_precision(o, tiny_split(), nullptr).final_scale, 0.0);
}

TEST(MemoryTraining, FlagChecksRefuseCombinationsThatMeanNothing) {
  MemoryTrainingOptions o = tiny_options("bf16", "none");
  o.data = "/nonexistent-fortunes";
  EXPECT_NE(check_memory_training_flags(o), "");
  o = tiny_options("bf16", "none");
  o.heads = 3;
  EXPECT_NE(check_memory_training_flags(o).find("--heads 3"), std::string::npos);
}

TEST(MemoryBench, LargestBatchIsTheLastThatFits) {
  GptConfig c;
  c.vocab = 96;
  c.context = 64;
  c.layers = 2;
  c.heads = 4;
  c.hidden = 64;
  c.attention = AttentionKind::naive;
  const int64_t state = zero_state_bytes(gpt_parameter_count(c), Precision::fp32, 0, 1);
  for (const RecomputePolicy policy :
       {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
    const int64_t budget = 48 << 20;
    const int64_t b = largest_batch_within(budget, state, c, 64, policy, Precision::fp32);
    ASSERT_GT(b, 0);
    EXPECT_LE(state + gpt_activation_formula(c, b, 64, policy, Precision::fp32).peak(), budget);
    EXPECT_GT(state + gpt_activation_formula(c, b + 1, 64, policy, Precision::fp32).peak(), budget);
  }
  EXPECT_EQ(largest_batch_within(1000, state, c, 64, RecomputePolicy::full, Precision::bf16), 0);
  EXPECT_GT(largest_batch_within(48 << 20, state, c, 64, RecomputePolicy::full, Precision::fp32),
            largest_batch_within(48 << 20, state, c, 64, RecomputePolicy::none, Precision::fp32));
}

TEST(MemoryBench, ZeroStatesAreSixteenPsiCutByTheStage) {
  const int64_t psi = 1000;
  EXPECT_EQ(zero_state_bytes(psi, Precision::fp32, 0, 4), 16 * psi);
  EXPECT_EQ(zero_state_bytes(psi, Precision::bf16, 0, 4), 16 * psi);
  EXPECT_EQ(zero_state_bytes(psi, Precision::fp32, 1, 4), 4 * psi + 4 * psi + 8 * psi / 4);
  EXPECT_EQ(zero_state_bytes(psi, Precision::bf16, 1, 4), 2 * psi + 2 * psi + 12 * psi / 4);
  EXPECT_EQ(zero_state_bytes(psi, Precision::bf16, 2, 4), 2 * psi + 14 * psi / 4);
  EXPECT_EQ(zero_state_bytes(psi, Precision::bf16, 3, 4), 16 * psi / 4);
}

}  // namespace
}  // namespace course
