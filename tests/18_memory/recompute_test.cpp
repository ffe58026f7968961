// recompute_test.cpp: lesson 18, part 1: checkpoint (recompute.h) and the policies that
// apply it to lesson 17's GPT (recompute_policy.h): gradients bit-identical to the run
// without recomputation, what the graph keeps, the recomputation actually happening, and
// the errors.
//
//   ./build/solutions/test_18 --gtest_filter='Checkpoint*:RecomputePolicy*'
#include "recompute.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "activation_ledger.h"
#include "error.h"
#include "gpt.h"
#include "gpt_ops.h"
#include "ops.h"
#include "recompute_policy.h"
#include "saved_tensors.h"
#include "tensor_ops.h"

namespace course {
namespace {

Tensor wavy(const Shape& shape, int salt) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = 0.25f * static_cast<float>((i * 7 + salt * 3) % 11) - 1.2f;
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

GptConfig small_config(AttentionKind kind) {
  GptConfig c;
  c.vocab = 13;
  c.context = 9;
  c.layers = 3;
  c.heads = 2;
  c.hidden = 8;
  c.attention = kind;
  c.tiles = {4, 3};
  return c;
}

// A small region: gelu(x W^T + b) * y, with W and b captured (parameters).
struct Region {
  Variable w{wavy({5, 4}, 1), true};
  Variable b{wavy({5}, 2), true};
  int calls = 0;
  CheckpointFn fn() {
    return [this](const std::vector<Variable>& in) {
      ++calls;
      return mul(gelu(linear(in[0], w, b)), in[1]);
    };
  }
};

TEST(Checkpoint, ForwardGivesFnsValueAndKeepsOnlyTheInputs) {
  Region r;
  const Variable x(wavy({3, 4}, 3), true), y(wavy({3, 5}, 4), true);
  const Variable plain = r.fn()({x, y});
  const Variable out = checkpoint(r.fn(), {x, y});
  EXPECT_TRUE(same_bits(out.data(), plain.data()));
  ASSERT_TRUE(out.grad_fn());
  EXPECT_EQ(out.grad_fn()->name(), "CheckpointBackward");
  const SavedTensorLedger ledger = saved_tensor_ledger(sum(out));
  EXPECT_EQ(ledger.bytes_of("CheckpointBackward"), 4 * (3 * 4 + 3 * 5));
  EXPECT_EQ(ledger.bytes_of("LinearBackward"), 0) << ledger.describe();
  EXPECT_EQ(ledger.bytes_of("GeluBackward"), 0) << ledger.describe();
  EXPECT_EQ(ledger.total_bytes, 4 * (3 * 4 + 3 * 5)) << ledger.describe();
}

TEST(Checkpoint, GradientsOfInputsAndParametersAreBitIdentical) {
  Region plain_r, ckpt_r;
  const Variable x1(wavy({3, 4}, 3), true), y1(wavy({3, 5}, 4), true);
  const Variable x2(wavy({3, 4}, 3), true), y2(wavy({3, 5}, 4), true);
  const Tensor seed = wavy({3, 5}, 9);
  plain_r.fn()({x1, y1}).backward(seed);
  checkpoint(ckpt_r.fn(), {x2, y2}).backward(seed);
  EXPECT_TRUE(same_bits(x1.grad(), x2.grad()));
  EXPECT_TRUE(same_bits(y1.grad(), y2.grad()));
  EXPECT_TRUE(same_bits(plain_r.w.grad(), ckpt_r.w.grad()));
  EXPECT_TRUE(same_bits(plain_r.b.grad(), ckpt_r.b.grad()));
}

TEST(Checkpoint, RunsFnAgainInBackwardOnly) {
  Region r;
  const Variable x(wavy({2, 4}, 5), true), y(wavy({2, 5}, 6), true);
  const Variable out = checkpoint(r.fn(), {x, y});
  EXPECT_EQ(r.calls, 1) << "the forward runs fn once";
  out.backward(wavy({2, 5}, 7));
  EXPECT_EQ(r.calls, 2) << "the backward must run fn again (recomputation)";
}

TEST(Checkpoint, ParametersGetGradientsWhenNoInputRequiresGrad) {
  Region plain_r, ckpt_r;
  const Variable x(wavy({3, 4}, 3)), y(wavy({3, 5}, 4));  // inputs need no gradient
  const Tensor seed = wavy({3, 5}, 8);
  plain_r.fn()({x, y}).backward(seed);
  const Variable out = checkpoint(ckpt_r.fn(), {x, y});
  ASSERT_TRUE(out.requires_grad()) << "the captured parameters need the node";
  out.backward(seed);
  EXPECT_TRUE(same_bits(plain_r.w.grad(), ckpt_r.w.grad()));
  EXPECT_TRUE(same_bits(plain_r.b.grad(), ckpt_r.b.grad()));
  EXPECT_FALSE(x.grad().defined());
}

TEST(Checkpoint, AnUnusedInputGetsZeros) {
  const Variable x(wavy({2, 3}, 1), true), unused(wavy({4}, 2), true);
  const Variable out =
      checkpoint([](const std::vector<Variable>& in) { return mul(in[0], in[0]); }, {x, unused});
  out.backward(wavy({2, 3}, 3));
  ASSERT_TRUE(unused.grad().defined());
  for (const float g : unused.grad().to_vector()) EXPECT_EQ(g, 0.0f);
  const std::vector<float> gx = x.grad().to_vector(), xs = x.data().to_vector(),
                           seed = wavy({2, 3}, 3).to_vector();
  for (size_t i = 0; i < gx.size(); ++i) EXPECT_FLOAT_EQ(gx[i], 2 * xs[i] * seed[i]);
}

TEST(Checkpoint, UnderNoGradGuardRecordsNothing) {
  Region r;
  const Variable x(wavy({2, 4}, 5), true), y(wavy({2, 5}, 6), true);
  const NoGradGuard no_grad;
  const Variable out = checkpoint(r.fn(), {x, y});
  EXPECT_FALSE(out.grad_fn());
  EXPECT_FALSE(out.requires_grad());
}

TEST(Checkpoint, BackwardRecordsAgainEvenUnderNoGradGuard) {
  Region plain_r, ckpt_r;
  const Variable x1(wavy({3, 4}, 3), true), y1(wavy({3, 5}, 4), true);
  const Variable x2(wavy({3, 4}, 3), true), y2(wavy({3, 5}, 4), true);
  const Tensor seed = wavy({3, 5}, 9);
  const Variable plain = plain_r.fn()({x1, y1});
  const Variable out = checkpoint(ckpt_r.fn(), {x2, y2});
  {
    const NoGradGuard no_grad;  // the recomputation must record anyway (EnableGradGuard)
    plain.backward(seed);
    out.backward(seed);
  }
  EXPECT_TRUE(same_bits(x1.grad(), x2.grad()));
  EXPECT_TRUE(same_bits(plain_r.w.grad(), ckpt_r.w.grad()));
}

TEST(Checkpoint, NestedCheckpointsAreBitIdentical) {
  Region inner, plain_r;
  const Variable x1(wavy({3, 4}, 3), true), y1(wavy({3, 5}, 4), true);
  const Variable x2(wavy({3, 4}, 3), true), y2(wavy({3, 5}, 4), true);
  const auto outer_plain = [&](const Variable& x, const Variable& y) {
    return gelu(plain_r.fn()({x, y}));
  };
  const CheckpointFn outer = [&](const std::vector<Variable>& in) {
    return gelu(checkpoint(inner.fn(), {in[0], in[1]}));
  };
  const Tensor seed = wavy({3, 5}, 2);
  outer_plain(x1, y1).backward(seed);
  checkpoint(outer, {x2, y2}).backward(seed);
  EXPECT_TRUE(same_bits(x1.grad(), x2.grad()));
  EXPECT_TRUE(same_bits(y1.grad(), y2.grad()));
  EXPECT_TRUE(same_bits(plain_r.w.grad(), inner.w.grad()));
}

TEST(Checkpoint, RefusesBadInput) {
  const Variable x(wavy({2, 3}, 1), true);
  EXPECT_THROW(checkpoint(CheckpointFn(), {x}), ConfigError);
  EXPECT_THROW(checkpoint([](const std::vector<Variable>& in) { return in[0]; }, {Variable()}),
               ConfigError);
  int calls = 0;
  const Variable out = checkpoint(
      [&calls](const std::vector<Variable>& in) {
        // A function of something besides its inputs: another shape the second time.
        return ++calls == 1 ? mul(in[0], in[0]) : reshape(mul(in[0], in[0]), {3, 2});
      },
      {x});
  try {
    out.backward(wavy({2, 3}, 2));
    FAIL() << "a recomputation of another shape must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos) << e.what();
  }
}

// The GPT's gradients and loss under each policy, against none, bit for bit.
void expect_policy_bit_identical(AttentionKind kind, RecomputePolicy policy) {
  const GptConfig c = small_config(kind);
  const TokenBatch batch = counting_batch(c.vocab, 2, 7);
  Rng r1(5), r2(5);
  Gpt plain(c, r1), recomputed(c, r2);
  install_model_seams(recomputed, policy, Precision::fp32);
  const Variable l1 = cross_entropy(plain.forward(Variable(batch.inputs)), batch.targets);
  const Variable l2 = cross_entropy(recomputed.forward(Variable(batch.inputs)), batch.targets);
  EXPECT_EQ(l1.item(), l2.item());
  l1.backward();
  l2.backward();
  const auto p1 = plain.named_parameters(), p2 = recomputed.named_parameters();
  ASSERT_EQ(p1.size(), p2.size());
  for (size_t i = 0; i < p1.size(); ++i) {
    EXPECT_TRUE(same_bits(p1[i].second.grad(), p2[i].second.grad()))
        << p1[i].first << " under " << recompute_policy_name(policy) << ", "
        << attention_kind_name(kind) << " attention";
  }
}

TEST(RecomputePolicy, FullGivesBitIdenticalGptGradients) {
  expect_policy_bit_identical(AttentionKind::naive, RecomputePolicy::full);
  expect_policy_bit_identical(AttentionKind::tiled, RecomputePolicy::full);
}

TEST(RecomputePolicy, SelectiveGivesBitIdenticalGptGradients) {
  expect_policy_bit_identical(AttentionKind::naive, RecomputePolicy::selective);
  expect_policy_bit_identical(AttentionKind::tiled, RecomputePolicy::selective);
}

TEST(RecomputePolicy, SelectiveRemovesTheProbabilitiesAndFullKeepsBlockInputs) {
  const GptConfig c = small_config(AttentionKind::naive);
  const TokenBatch batch = counting_batch(c.vocab, 2, 9);
  Rng rng(3);
  Gpt model(c, rng);
  const SavedTensorLedger none =
      measure_gpt_activations(model, batch, RecomputePolicy::none, Precision::fp32);
  const SavedTensorLedger selective =
      measure_gpt_activations(model, batch, RecomputePolicy::selective, Precision::fp32);
  const SavedTensorLedger full =
      measure_gpt_activations(model, batch, RecomputePolicy::full, Precision::fp32);
  const int64_t p_bytes = 4 * c.layers * c.heads * 2 * 9 * 9;
  EXPECT_EQ(none.total_bytes - selective.total_bytes, p_bytes)
      << none.describe() << selective.describe();
  EXPECT_EQ(selective.bytes_of("AttentionBackward"), 0);
  EXPECT_EQ(full.bytes_of("CheckpointBackward"), 4 * c.layers * 2 * 9 * c.hidden)
      << full.describe();
  EXPECT_EQ(full.bytes_of("LinearBackward"), 4 * 2 * 9 * c.hidden) << "lm_head's input only";
}

TEST(RecomputePolicy, ParsesItsNames) {
  EXPECT_EQ(parse_recompute_policy("none"), RecomputePolicy::none);
  EXPECT_EQ(parse_recompute_policy("selective"), RecomputePolicy::selective);
  EXPECT_EQ(parse_recompute_policy("full"), RecomputePolicy::full);
  EXPECT_STREQ(recompute_policy_name(RecomputePolicy::selective), "selective");
  EXPECT_THROW(parse_recompute_policy("some"), ConfigError);
}

}  // namespace
}  // namespace course
