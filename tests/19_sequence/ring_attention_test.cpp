// ring_attention_test.cpp: lesson 19: ring attention (ring_attention.h) against one process's
// attention on the whole sequence (cp_oracle.h: lesson 17's kernels in double), on every
// rank's own tokens: the forward's o and lse, the backward's dq, dk, dv from a position-
// dependent dout, at C = 1, 2, 3, 4, both layouts, chunks of 3 tokens with tiles that do not
// divide them; the autograd op; the floats sent, measured at the group's door, against the
// kernels' count and the cost model; the chunk pairs computed against
// causal_block_products; the errors.
//
//   ./build/solutions/test_19 --gtest_filter='RingAttention*'
#include "ring_attention.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../collectives/group_factory.h"
#include "attention_op.h"
#include "counting_group.h"
#include "cp_oracle.h"
#include "error.h"
#include "harness.h"
#include "ops.h"
#include "sequence_layout.h"

namespace course::test {
namespace {

const SequenceLayout kLayouts[] = {SequenceLayout::zigzag, SequenceLayout::contiguous};
constexpr int64_t kProblems = 3, kDim = 4, kChunk = 3;  // S = 2 C kChunk
const AttentionTiles kTiles{2, 2};                      // short last blocks everywhere

std::string where(SequenceLayout layout, int cp) {
  return std::string(sequence_layout_name(layout)) + ", C = " + std::to_string(cp);
}

// The sizes of one check: problems, head dimension, tokens per chunk, the kernels' tiles.
struct RingSize {
  int64_t problems = kProblems, dim = kDim, chunk = kChunk;
  AttentionTiles tiles = kTiles;
};

// One rank's ring forward (and, with `backward`, backward) against the oracle.
void check_ring(ProcessGroup& cp, SequenceLayout layout, bool backward, const RingSize& size = {}) {
  const int c = cp.size();
  const int64_t n = size.problems, d = size.dim;
  const AttentionTiles& tiles = size.tiles;
  const int64_t seq = 2 * c * size.chunk, local = seq / c;
  const WholeAttention whole = whole_attention(n, seq, d);
  const std::vector<int64_t> pos = token_positions(layout, seq, c, cp.rank());
  const auto mine = [&](const std::vector<double>& x) { return rank_rows(x, n, seq, d, pos); };
  const std::vector<float> q = mine(whole.q), k = mine(whole.k), v = mine(whole.v);
  const AttentionShape shape{n, local, d, true};
  std::vector<float> o(q.size()), lse(static_cast<size_t>(n * local));
  ring_attention_forward(cp, layout, shape, tiles, q.data(), k.data(), v.data(), o.data(),
                         lse.data());
  expect_rows_near(o, whole.o, n, seq, d, pos, "o");
  expect_rows_near(lse, whole.lse, n, seq, 1, pos, "lse");
  if (!backward) return;
  const std::vector<float> dout = mine(whole.dout);
  std::vector<float> dq(q.size(), 7.0f), dk(q.size(), 7.0f), dv(q.size(), 7.0f);  // overwritten
  ring_attention_backward(cp, layout, shape, tiles, q.data(), k.data(), v.data(), o.data(),
                          lse.data(), dout.data(), dq.data(), dk.data(), dv.data());
  expect_rows_near(dq, whole.dq, n, seq, d, pos, "dq");
  expect_rows_near(dk, whole.dk, n, seq, d, pos, "dk");
  expect_rows_near(dv, whole.dv, n, seq, d, pos, "dv");
}

TEST(RingAttention, ForwardMatchesTheWholeSequenceOnEveryRanksTokens) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto cp = make_group("tcp", ctx);
      for (const SequenceLayout layout : kLayouts) {
        SCOPED_TRACE(where(layout, ctx.world));
        check_ring(*cp, layout, false);
      }
    });
  }
}

TEST(RingAttention, BackwardMatchesTheWholeSequenceOnEveryRanksTokens) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto cp = make_group("tcp", ctx);
      for (const SequenceLayout layout : kLayouts) {
        SCOPED_TRACE(where(layout, ctx.world));
        check_ring(*cp, layout, true);
      }
    });
  }
}

TEST(RingAttention, LargeBlocksOfAMegabyteMatchTheWholeSequence) {
  // 4 problems of 512 local tokens of dimension 64: each k and v block 512 KiB, a message of
  // many socket buffers, in flight while the next block computes.
  run_ranks(2, [](RankContext& ctx) {
    auto cp = make_group("tcp", ctx);
    check_ring(*cp, SequenceLayout::zigzag, true,
               {.problems = 4, .dim = 64, .chunk = 256, .tiles = {32, 32}});
  });
}

TEST(RingAttention, GradientsThroughAutogradMatchTheWholeSequence) {
  for (int world : {1, 2, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto cp = make_group("tcp", ctx);
      const int64_t batch = 2, heads = 3, seq = 4 * ctx.world;
      for (const SequenceLayout layout : kLayouts) {
        SCOPED_TRACE(where(layout, ctx.world));
        const std::vector<int64_t> pos = token_positions(layout, seq, ctx.world, ctx.rank);
        // [B, heads, S, d] as n = B heads problems; the loss sum(w * y).
        const WholeAttention whole = whole_attention(batch * heads, seq, kDim);
        const auto mine = [&](const std::vector<double>& x) {
          return Variable(Tensor::from_vector({batch, heads, seq / ctx.world, kDim},
                                              rank_rows(x, batch * heads, seq, kDim, pos)),
                          true);
        };
        const Variable q = mine(whole.q), k = mine(whole.k), v = mine(whole.v);
        const Variable w(mine(whole.dout).data());
        const Variable y = ring_attention(q, k, v, *cp, layout, kTiles);
        sum(mul(y, w)).backward();  // dL/dy = w: the oracle's dout
        ASSERT_NE(y.grad_fn(), nullptr);
        EXPECT_EQ(y.grad_fn()->name(), "RingAttentionBackward");
        EXPECT_EQ(y.grad_fn()->saved_tensors().size(), 5u) << "q, k, v, o, lse";
        expect_rows_near(y.data().to_vector(), whole.o, batch * heads, seq, kDim, pos, "y");
        expect_rows_near(q.grad().to_vector(), whole.dq, batch * heads, seq, kDim, pos, "dq");
        expect_rows_near(k.grad().to_vector(), whole.dk, batch * heads, seq, kDim, pos, "dk");
        expect_rows_near(v.grad().to_vector(), whole.dv, batch * heads, seq, kDim, pos, "dv");
      }
    });
  }
}

TEST(RingAttention, FloatsSentEqualTheModelAndPairsEqualTheBlockProducts) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto group = make_group("tcp", ctx);
      CountingGroup cp(*group);
      const int c = ctx.world;
      const int64_t seq = 2 * c * kChunk, local = seq / c;
      const AttentionShape shape{kProblems, local, kDim, true};
      for (const SequenceLayout layout : kLayouts) {
        SCOPED_TRACE(where(layout, c));
        const WholeAttention whole = whole_attention(kProblems, seq, kDim);
        const std::vector<int64_t> pos = token_positions(layout, seq, c, ctx.rank);
        const std::vector<float> q = rank_rows(whole.q, kProblems, seq, kDim, pos);
        std::vector<float> o(q.size()), lse(static_cast<size_t>(kProblems * local));
        std::vector<float> dq(q.size()), dk(q.size()), dv(q.size());
        cp.reset();
        RingTraffic forward;
        ring_attention_forward(cp, layout, shape, kTiles, q.data(), q.data(), q.data(), o.data(),
                               lse.data(), &forward);
        EXPECT_EQ(cp.floats_sent(), ring_attention_forward_floats(shape, c)) << "forward";
        EXPECT_EQ(forward.floats_sent, cp.floats_sent()) << "the forward's own count";
        EXPECT_EQ(ring_attention_forward_floats(shape, c), (c - 1) * 2 * kProblems * local * kDim);
        EXPECT_EQ(forward.block_products, causal_block_products(layout, c, ctx.rank));
        cp.reset();
        RingTraffic back;
        ring_attention_backward(cp, layout, shape, kTiles, q.data(), q.data(), q.data(), o.data(),
                                lse.data(), q.data(), dq.data(), dk.data(), dv.data(), &back);
        EXPECT_EQ(cp.floats_sent(), ring_attention_backward_floats(shape, c)) << "backward";
        EXPECT_EQ(back.floats_sent, cp.floats_sent()) << "the backward's own count";
        EXPECT_EQ(ring_attention_backward_floats(shape, c),
                  c == 1 ? 0 : (2 * c - 1) * 2 * kProblems * local * kDim);
        EXPECT_EQ(back.block_products, causal_block_products(layout, c, ctx.rank));
        EXPECT_EQ(cp.other_calls(), 0) << "only isend and irecv";
      }
    });
  }
}

TEST(RingAttention, RefusesLocalTokensThatDoNotSplitIntoTwoChunks) {
  run_ranks(2, [](RankContext& ctx) {
    auto cp = make_group("tcp", ctx);
    const Variable q(Tensor::zeros({1, 2, 3, 4}), true);  // S = 6, not a multiple of 4
    try {
      ring_attention(q, q, q, *cp, SequenceLayout::zigzag);
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("S = 6"), std::string::npos) << what;
      EXPECT_NE(what.find("C = 2"), std::string::npos) << what;
    }
    EXPECT_THROW(
        ring_attention(q, Variable(Tensor::zeros({1, 2, 4, 4})), q, *cp, SequenceLayout::zigzag),
        ConfigError);
  });
}

}  // namespace
}  // namespace course::test
