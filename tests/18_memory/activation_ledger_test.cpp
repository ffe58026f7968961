// activation_ledger_test.cpp: lesson 18, given: the GPT's saved-for-backward bytes counted
// from its graph equal the formula of activation_ledger.h to the byte, at several shapes,
// both attention kinds, every policy and precision; the S² term grows with S under naive
// attention and is absent under tiled.
//
//   ./build/solutions/test_18 --gtest_filter='ActivationLedger*'
#include "activation_ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpt.h"

namespace course {
namespace {

struct Shape4 {
  int64_t batch, seq, hidden, heads;
};

GptConfig config_for(const Shape4& s, AttentionKind kind, int64_t layers) {
  GptConfig c;
  c.vocab = 17;
  c.context = s.seq;
  c.layers = layers;
  c.heads = s.heads;
  c.hidden = s.hidden;
  c.attention = kind;
  c.tiles = {4, 5};
  return c;
}

TEST(ActivationLedger, MeasurementEqualsTheFormulaToTheByte) {
  const std::vector<Shape4> shapes = {{1, 8, 8, 2}, {2, 12, 12, 3}, {3, 16, 16, 4}, {2, 5, 6, 1}};
  for (const Shape4& s : shapes) {
    for (const AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
      for (const RecomputePolicy policy :
           {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
        for (const Precision p : {Precision::fp32, Precision::bf16}) {
          const GptConfig c = config_for(s, kind, 2);
          Rng rng(7);
          Gpt model(c, rng);
          const SavedTensorLedger measured =
              measure_gpt_activations(model, counting_batch(c.vocab, s.batch, s.seq), policy, p);
          const ActivationBytes formula = gpt_activation_formula(c, s.batch, s.seq, policy, p);
          EXPECT_EQ(measured.total_bytes, formula.total())
              << "B " << s.batch << " S " << s.seq << " H " << s.hidden << " heads " << s.heads
              << ", " << attention_kind_name(kind) << ", " << recompute_policy_name(policy) << ", "
              << precision_name(p) << "\n"
              << measured.describe();
        }
      }
    }
  }
}

TEST(ActivationLedger, PerBlockBytesAreTheSameForEveryBlock) {
  // One more block adds exactly per_block bytes, measured.
  const Shape4 s{2, 10, 8, 2};
  for (const AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
    Rng r1(1), r2(1);
    Gpt two(config_for(s, kind, 2), r1), three(config_for(s, kind, 3), r2);
    const TokenBatch batch = counting_batch(17, s.batch, s.seq);
    const int64_t delta =
        measure_gpt_activations(three, batch, RecomputePolicy::none, Precision::fp32).total_bytes -
        measure_gpt_activations(two, batch, RecomputePolicy::none, Precision::fp32).total_bytes;
    EXPECT_EQ(delta, gpt_activation_formula(config_for(s, kind, 3), s.batch, s.seq,
                                            RecomputePolicy::none, Precision::fp32)
                         .per_block);
  }
}

TEST(ActivationLedger, TheQuadraticTermGrowsWithSUnderNaiveAndVanishesUnderTiled) {
  // Per block and per token: naive grows by a·S (the probabilities), tiled stays flat.
  int64_t previous_naive = 0, previous_tiled = 0;
  for (const int64_t seq : {8, 16, 32}) {
    const Shape4 s{1, seq, 8, 2};
    Rng r1(2), r2(2);
    Gpt naive(config_for(s, AttentionKind::naive, 1), r1);
    Gpt tiled(config_for(s, AttentionKind::tiled, 1), r2);
    const TokenBatch batch = counting_batch(17, 1, seq);
    const int64_t n = measure_gpt_activations(naive, batch, RecomputePolicy::none, Precision::fp32)
                          .bytes_of("AttentionBackward");
    const int64_t t = measure_gpt_activations(tiled, batch, RecomputePolicy::none, Precision::fp32)
                          .bytes_of("AttentionBackward");
    EXPECT_EQ(n, 4 * (3 * seq * 8 + 2 * seq * seq));
    EXPECT_EQ(t, 4 * (4 * seq * 8 + 2 * seq));
    if (previous_naive > 0) {
      EXPECT_GT(n / seq, previous_naive) << "naive's bytes per token grow with S";
      EXPECT_EQ(t / seq, previous_tiled) << "tiled's bytes per token do not";
    }
    previous_naive = n / seq;
    previous_tiled = t / seq;
  }
}

TEST(ActivationLedger, SixteenBitsHalveEveryTerm) {
  const GptConfig c = config_for({2, 8, 8, 2}, AttentionKind::naive, 2);
  for (const RecomputePolicy policy :
       {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
    const ActivationBytes f32 = gpt_activation_formula(c, 2, 8, policy, Precision::fp32);
    const ActivationBytes f16 = gpt_activation_formula(c, 2, 8, policy, Precision::fp16);
    EXPECT_EQ(f32.total(), 2 * f16.total());
    EXPECT_EQ(f32.peak_extra, 2 * f16.peak_extra);
  }
}

}  // namespace
}  // namespace course
