// ulysses_test.cpp: lesson 19: Ulysses (ulysses.h): the re-layout puts every (head, token)
// where the whole sequence has it and the inverse undoes it, at C = 1, 2, 3, 4 with 12
// heads, both layouts; the op's output and gradients against one process's attention on
// the whole sequence (cp_oracle.h), naive and tiled; the floats sent against the model;
// the errors.
//
//   ./build/solutions/test_19 --gtest_filter='Ulysses*'
#include "ulysses.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../collectives/group_factory.h"
#include "counting_group.h"
#include "cp_oracle.h"
#include "error.h"
#include "harness.h"
#include "ops.h"
#include "sequence_layout.h"

namespace course::test {
namespace {

const SequenceLayout kLayouts[] = {SequenceLayout::zigzag, SequenceLayout::contiguous};
constexpr int64_t kBatch = 2, kDim = 3;

std::string where(SequenceLayout layout, int cp) {
  return std::string(sequence_layout_name(layout)) + ", C = " + std::to_string(cp);
}

// The value that names (batch, head, global position, feature): exact in float.
float label(int64_t b, int64_t head, int64_t pos, int64_t f) {
  return static_cast<float>(((b * 100 + head) * 100 + pos) * 10 + f);
}

TEST(Ulysses, ReLayoutPutsEveryTokenOfItsHeadsInGlobalOrderAndBack) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto cp = make_group("tcp", ctx);
      const int c = ctx.world;
      const int64_t heads = 12, seq = 4 * c, local = seq / c, here = heads / c;
      for (const SequenceLayout layout : kLayouts) {
        SCOPED_TRACE(where(layout, c));
        const std::vector<int64_t> pos = token_positions(layout, seq, c, ctx.rank);
        Tensor x = Tensor::empty({kBatch, heads, local, kDim});
        for (int64_t b = 0; b < kBatch; ++b)
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < local; ++i)
              for (int64_t f = 0; f < kDim; ++f)
                x.data()[((b * heads + h) * local + i) * kDim + f] =
                    label(b, h, pos[static_cast<size_t>(i)], f);
        const Tensor y = ulysses_to_heads(x, *cp, layout);
        ASSERT_EQ(shape_str(y.shape()), shape_str({kBatch, here, seq, kDim}));
        for (int64_t b = 0; b < kBatch; ++b)
          for (int64_t h = 0; h < here; ++h)
            for (int64_t p = 0; p < seq; ++p)
              for (int64_t f = 0; f < kDim; ++f)
                ASSERT_EQ(y.data()[((b * here + h) * seq + p) * kDim + f],
                          label(b, ctx.rank * here + h, p, f))
                    << "batch " << b << ", head " << ctx.rank * here + h << ", position " << p;
        const Tensor back = ulysses_to_sequence(y, *cp, layout);
        ASSERT_EQ(shape_str(back.shape()), shape_str(x.shape()));
        EXPECT_EQ(back.to_vector(), x.to_vector()) << "to_sequence(to_heads(x)) != x";
      }
    });
  }
}

TEST(Ulysses, OutputAndGradientsMatchTheWholeSequence) {
  for (int world : {1, 2, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto cp = make_group("tcp", ctx);
      const int c = ctx.world;
      const int64_t heads = 4, seq = 6 * c, n = kBatch * heads;
      const WholeAttention whole = whole_attention(n, seq, kDim);
      for (const AttentionKind kind : {AttentionKind::tiled, AttentionKind::naive}) {
        for (const SequenceLayout layout : kLayouts) {
          SCOPED_TRACE(where(layout, c) + ", " + attention_kind_name(kind));
          const std::vector<int64_t> pos = token_positions(layout, seq, c, ctx.rank);
          const auto mine = [&](const std::vector<double>& x) {
            return Variable(Tensor::from_vector({kBatch, heads, seq / c, kDim},
                                                rank_rows(x, n, seq, kDim, pos)),
                            true);
          };
          const Variable q = mine(whole.q), k = mine(whole.k), v = mine(whole.v);
          const Variable w(mine(whole.dout).data());
          const Variable y = ulysses_attention(q, k, v, *cp, layout, kind, AttentionTiles{4, 5});
          sum(mul(y, w)).backward();
          expect_rows_near(y.data().to_vector(), whole.o, n, seq, kDim, pos, "y");
          expect_rows_near(q.grad().to_vector(), whole.dq, n, seq, kDim, pos, "dq");
          expect_rows_near(k.grad().to_vector(), whole.dk, n, seq, kDim, pos, "dk");
          expect_rows_near(v.grad().to_vector(), whole.dv, n, seq, kDim, pos, "dv");
        }
      }
    });
  }
}

TEST(Ulysses, FloatsSentEqualTheModel) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [](RankContext& ctx) {
      auto group = make_group("tcp", ctx);
      CountingGroup cp(*group);
      const int c = ctx.world;
      const int64_t heads = 12, seq = 2 * c, local = seq / c;
      const int64_t numel = kBatch * heads * local * kDim;
      const auto input = [&](int which) {
        std::vector<float> x(static_cast<size_t>(numel));
        for (int64_t i = 0; i < numel; ++i) {
          x[static_cast<size_t>(i)] =
              static_cast<float>(whole_value(ctx.rank, i / kDim, i % kDim, which));
        }
        return Variable(Tensor::from_vector({kBatch, heads, local, kDim}, x), true);
      };
      const Variable q = input(0), k = input(1), v = input(2);
      const Variable y = ulysses_attention(q, k, v, cp, SequenceLayout::zigzag);
      EXPECT_EQ(cp.floats_sent(), ulysses_attention_forward_floats(numel, c)) << "forward";
      EXPECT_EQ(ulysses_attention_forward_floats(numel, c), 4 * numel / c * (c - 1));
      cp.reset();
      sum(y).backward();
      EXPECT_EQ(cp.floats_sent(), ulysses_attention_backward_floats(numel, c)) << "backward";
      EXPECT_EQ(ulysses_attention_backward_floats(numel, c), 4 * numel / c * (c - 1));
      EXPECT_EQ(cp.other_calls(), 0) << "only all_to_all";
    });
  }
}

TEST(Ulysses, RefusesHeadsThatDoNotDivideByTheGroup) {
  run_ranks(4, [](RankContext& ctx) {
    auto cp = make_group("tcp", ctx);
    const Variable q(Tensor::zeros({1, 6, 2, 3}), true);
    try {
      ulysses_attention(q, q, q, *cp, SequenceLayout::zigzag);
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "Ulysses needs the heads (6) to divide by the context-parallel size (4)"),
                std::string::npos)
          << e.what();
    }
    const Variable odd(Tensor::zeros({1, 4, 3, 3}), true);  // S = 12, not a multiple of 8
    try {
      ulysses_attention(odd, odd, odd, *cp, SequenceLayout::zigzag);
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("S = 12"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace course::test
