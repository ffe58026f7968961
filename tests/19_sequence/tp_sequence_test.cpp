// tp_sequence_test.cpp: lesson 19, given: tensor parallelism over heads and Megatron's
// sequence parallelism (tp_sequence.h): a block run by tp_block_runner equals the whole
// block, output, input gradient and parameter gradients, at T = 2 and 4, with and without
// SP; SP sends TP's payload to the byte and keeps 1/T of the LayerNorms' activations; the
// errors.
//
//   ./build/solutions/test_19 --gtest_filter='TpSequence*'
#include "tp_sequence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "../collectives/group_factory.h"
#include "byte_stream.h"
#include "error.h"
#include "gpt.h"
#include "harness.h"
#include "rng.h"
#include "saved_tensors.h"
#include "tensor_ops.h"

namespace course::test {
namespace {

constexpr int64_t kBatch = 2, kSeq = 8;

GptConfig block_config(int64_t heads, int64_t hidden = 16) {
  GptConfig c;
  c.vocab = 16;
  c.context = kSeq;
  c.layers = 2;
  c.heads = heads;
  c.hidden = hidden;
  return c;
}

// Position- and feature-dependent numbers, the same on every rank.
Tensor wave(const Shape& shape, double phase) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase));
  }
  return t;
}

struct BlockRun {
  Tensor y, dx;
  std::map<std::string, Tensor> grads;
};

// The block's forward and backward on x with seed dy; the block's runner is `runner` (empty:
// block.forward). Parameter gradients are read, then cleared.
BlockRun run_block(GptBlock& block, const Tensor& x, const Tensor& dy, const BlockRunner& runner) {
  Variable xv(x.clone(), true);
  const Variable y = runner ? runner(block, xv) : block.forward(xv);
  y.backward(dy);
  BlockRun r;
  r.y = y.data();
  r.dx = xv.grad();
  for (const auto& [name, p] : block.named_parameters()) {
    r.grads[name] = p.grad().clone();
    p.zero_grad();
  }
  return r;
}

// GPT-2's initialisation leaves every bias at 0, where a bias added T times reads the same as
// one added once: every parameter moves by a position-dependent 0.1 sin.
void perturb(Module& m) {
  double phase = 0.5;
  for (const Variable& p : m.parameters()) {
    const Tensor w = wave(p.shape(), phase += 0.7);
    for (int64_t i = 0; i < w.numel(); ++i) p.data().data()[i] += 0.1f * w.data()[i];
  }
}

double max_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(shape_str(a.shape()), shape_str(b.shape()));
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a.data()[i] - b.data()[i])));
  }
  return worst;
}

void expect_block_equal(int T, bool sp) {
  run_ranks(T, [&](RankContext& ctx) {
    auto tp = make_group("tcp", ctx);
    Rng rng(7);
    Gpt model(block_config(4), rng);
    perturb(model);
    GptBlock& block = *model.blocks()[0];
    const Tensor x = wave({kBatch, kSeq, 16}, 0.1);
    const Tensor dy = wave({kBatch, kSeq, 16}, 1.3);
    const BlockRun whole = run_block(block, x, dy, {});
    const Tensor mine_x = sp ? sequence_piece(x, T, ctx.rank) : x;
    // Under SP a rank's loss is the mean over its s/T tokens: its seed is T times its
    // piece of the whole mean's, and so is its input's gradient.
    Tensor mine_dy = sp ? sequence_piece(dy, T, ctx.rank) : dy;
    if (sp) scale_(mine_dy, static_cast<float>(T));
    Tensor whole_dx = sp ? sequence_piece(whole.dx, T, ctx.rank) : whole.dx;
    if (sp) scale_(whole_dx, static_cast<float>(T));
    BlockRun part = run_block(block, mine_x, mine_dy, tp_block_runner(*tp, sp, {}));
    const std::string where = "T = " + std::to_string(T) + (sp ? ", SP" : ", no SP");
    EXPECT_LT(max_diff(part.y, sp ? sequence_piece(whole.y, T, ctx.rank) : whole.y), 1e-5)
        << where << ": the output";
    EXPECT_LT(max_diff(part.dx, whole_dx), 1e-5) << where << ": the input's gradient";
    // What the training step does: without SP the slices scaled by T; then the mean.
    for (const auto& [name, p] : block.named_parameters()) p.set_grad(part.grads[name]);
    scale_tp_gradients(block, T, sp);
    for (const auto& [name, p] : block.named_parameters()) {
      Tensor g = p.grad().clone();
      tp->all_reduce(g.span(), ReduceOp::AVG);
      EXPECT_LT(max_diff(g, whole.grads.at(name)), 1e-5) << where << ": " << name;
      if (tp_sliced_parameter(name)) {  // this rank's slice only: zeros outside it
        EXPECT_GT(max_diff(part.grads[name], whole.grads.at(name)), 1e-4)
            << where << ": " << name << " is sliced, its gradient a part";
      }
    }
  });
}

TEST(TpSequence, TpBlockEqualsTheWholeBlock) {
  expect_block_equal(2, false);
  expect_block_equal(4, false);
}

TEST(TpSequence, SpBlockEqualsTheWholeBlockOnItsTokens) {
  expect_block_equal(2, true);
  expect_block_equal(4, true);
}

// What one forward and backward of the model's two blocks cost this rank: the bytes its
// sockets sent, and what the LayerNorms kept for backward (lesson 17's ledger).
struct BlockCost {
  uint64_t sent = 0;
  int64_t layer_norm_bytes = 0;
};

BlockCost block_cost(Gpt& model, ProcessGroup& tp, bool sp, int rank) {
  const int T = tp.size();
  const Tensor x = wave({kBatch, kSeq, 16}, 0.2);
  const Tensor mine = sp ? sequence_piece(x, T, rank) : x;
  const BlockRunner runner = tp_block_runner(tp, sp, {});
  const uint64_t before = tcp_bytes_sent();
  Variable h(mine.clone(), true);
  for (const auto& block : model.blocks()) h = runner(*block, h);
  BlockCost cost;
  std::vector<Tensor> params;  // left out: LayerNorm's weight is not an activation
  for (const Variable& p : model.parameters()) params.push_back(p.data());
  cost.layer_norm_bytes = saved_tensor_ledger(h, params).bytes_of("LayerNormBackward");
  h.backward(wave(h.shape(), 0.4));
  cost.sent = tcp_bytes_sent() - before;
  for (const auto& [name, p] : model.named_parameters()) p.zero_grad();
  return cost;
}

TEST(TpSequence, SpSendsTpsPayloadAndKeepsATthOfTheLayerNorms) {
  for (const int T : {2, 4}) {
    run_ranks(T, [&](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      Rng rng(3);
      Gpt model(block_config(4), rng);
      const BlockCost tp_cost = block_cost(model, *tp, false, ctx.rank);
      const BlockCost sp_cost = block_cost(model, *tp, true, ctx.rank);
      const uint64_t tp_bytes = tp_cost.sent, sp_bytes = sp_cost.sent;
      // Per block: two all-reduces of [B S, H] forward (g) and two backward (f), each
      // 2 (T-1)/T of the message from every rank of a ring; SP's halves, (T-1)/T each, the
      // same payload. Framing: each ring call sends one 16-byte header (lesson 02's) to its
      // right neighbour, and SP makes twice TP's calls.
      const uint64_t payload = 2 * 4 * 2 * (T - 1) * kBatch * kSeq * 16 / T * sizeof(float);
      constexpr uint64_t kHeader = 16, kTpCalls = 2 * 4, kSpCalls = 2 * 8;
      EXPECT_EQ(tp_bytes, payload + kHeader * kTpCalls) << "T = " << T;
      EXPECT_EQ(sp_bytes, payload + kHeader * kSpCalls) << "T = " << T;
      ASSERT_GT(tp_cost.layer_norm_bytes, 0);
      EXPECT_EQ(sp_cost.layer_norm_bytes * T, tp_cost.layer_norm_bytes) << "T = " << T;
    });
  }
}

TEST(TpSequence, ErrorsNameTheNumbers) {
  run_ranks(2, [](RankContext& ctx) {
    auto tp = make_group("tcp", ctx);
    Rng rng(1);
    Gpt model(block_config(3, 12), rng);  // 3 heads over 2 ranks
    try {
      tp_block_runner(*tp, false, {})(*model.blocks()[0], Variable(wave({1, 4, 12}, 0)));
      ADD_FAILURE() << "3 heads over 2 ranks ran";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("3 heads do not divide over 2"), std::string::npos)
          << e.what();
    }
    EXPECT_THROW(reduce_scatter_sequence_to_tp(Variable(wave({1, 3, 4}, 0)), *tp), ConfigError);
    EXPECT_THROW(gather_sequence_from_tp(Variable(wave({3, 4}, 0)), *tp), ConfigError);
  });
  EXPECT_THROW(sequence_piece(wave({1, 5}, 0), 2, 0), ConfigError);
}

}  // namespace
}  // namespace course::test
