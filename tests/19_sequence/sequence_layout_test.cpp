// sequence_layout_test.cpp: lesson 19: the two layouts of a sequence over a context-parallel
// group (sequence_layout.h): the chunks and positions of every rank at C = 1 to 5, the
// shard and unshard helpers, the causal block products (zig-zag balanced, contiguous's
// slowest rank (4C - 1)/(2C + 1) of the mean) and the errors.
//
//   ./build/solutions/test_19 --gtest_filter='SequenceLayout*'
#include "sequence_layout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "error.h"

namespace course::test {
namespace {

const SequenceLayout kLayouts[] = {SequenceLayout::contiguous, SequenceLayout::zigzag};

TEST(SequenceLayout, NamesParseBackAndUnknownOnesAreRefused) {
  for (const SequenceLayout layout : kLayouts) {
    EXPECT_EQ(parse_sequence_layout(sequence_layout_name(layout)), layout);
  }
  try {
    parse_sequence_layout("striped");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("striped"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("zigzag"), std::string::npos) << e.what();
  }
}

TEST(SequenceLayout, ChunksFollowTheFormulaAndEveryPositionIsHeldOnce) {
  for (int cp = 1; cp <= 5; ++cp) {
    for (const SequenceLayout layout : kLayouts) {
      SCOPED_TRACE(std::string(sequence_layout_name(layout)) + ", C = " + std::to_string(cp));
      const int64_t seq = 2 * cp * 3;  // chunks of 3 tokens
      std::vector<int> holder(static_cast<size_t>(seq), -1);
      for (int r = 0; r < cp; ++r) {
        const std::vector<int> chunks = chunks_of(layout, cp, r);
        const std::vector<int> want = layout == SequenceLayout::contiguous
                                          ? std::vector<int>{2 * r, 2 * r + 1}
                                          : std::vector<int>{r, 2 * cp - 1 - r};
        EXPECT_EQ(chunks, want) << "rank " << r;
        const std::vector<int64_t> pos = token_positions(layout, seq, cp, r);
        ASSERT_EQ(static_cast<int64_t>(pos.size()), seq / cp);
        for (size_t i = 0; i < pos.size(); ++i) {
          // Local token i is token i % 3 of the rank's chunk i / 3.
          EXPECT_EQ(pos[i], chunks[i / 3] * 3 + static_cast<int64_t>(i % 3)) << "rank " << r;
          ASSERT_GE(pos[i], 0);
          ASSERT_LT(pos[i], seq);
          EXPECT_EQ(holder[static_cast<size_t>(pos[i])], -1) << "position " << pos[i];
          holder[static_cast<size_t>(pos[i])] = r;
        }
      }
      EXPECT_EQ(std::count(holder.begin(), holder.end(), -1), 0);
    }
  }
}

TEST(SequenceLayout, ShardThenUnshardGivesTheSequenceBack) {
  for (int cp : {1, 2, 3, 4}) {
    for (const SequenceLayout layout : kLayouts) {
      SCOPED_TRACE(std::string(sequence_layout_name(layout)) + ", C = " + std::to_string(cp));
      const int64_t batch = 2, seq = 4 * cp, width = 3;
      Tensor full = Tensor::empty({batch, seq, width});
      for (int64_t i = 0; i < full.numel(); ++i) full.data()[i] = static_cast<float>(i);
      std::vector<Tensor> shards;
      for (int r = 0; r < cp; ++r) {
        shards.push_back(shard_sequence(full, layout, cp, r));
        const std::vector<int64_t> pos = token_positions(layout, seq, cp, r);
        ASSERT_EQ(shape_str(shards.back().shape()), shape_str({batch, seq / cp, width}));
        for (int64_t b = 0; b < batch; ++b) {
          for (int64_t i = 0; i < seq / cp; ++i) {
            for (int64_t f = 0; f < width; ++f) {
              ASSERT_EQ(shards.back().data()[(b * (seq / cp) + i) * width + f],
                        static_cast<float>((b * seq + pos[static_cast<size_t>(i)]) * width + f));
            }
          }
        }
      }
      EXPECT_EQ(unshard_sequence(shards, layout, cp).to_vector(), full.to_vector());
    }
  }
}

TEST(SequenceLayout, ZigzagBalancesTheCausalBlockProductsAndContiguousDoesNot) {
  for (int cp = 1; cp <= 8; ++cp) {
    SCOPED_TRACE("C = " + std::to_string(cp));
    int64_t total_zigzag = 0, total_contiguous = 0, slowest = 0;
    for (int r = 0; r < cp; ++r) {
      EXPECT_EQ(causal_block_products(SequenceLayout::zigzag, cp, r), 2 * cp + 1);
      EXPECT_EQ(causal_block_products(SequenceLayout::contiguous, cp, r), 4 * r + 3);
      total_zigzag += causal_block_products(SequenceLayout::zigzag, cp, r);
      total_contiguous += causal_block_products(SequenceLayout::contiguous, cp, r);
      slowest = std::max(slowest, causal_block_products(SequenceLayout::contiguous, cp, r));
    }
    // Both cover the causal triangle of 2C chunks: 1 + 2 + ... + 2C = C (2C + 1) products.
    EXPECT_EQ(total_zigzag, static_cast<int64_t>(cp) * (2 * cp + 1));
    EXPECT_EQ(total_contiguous, total_zigzag);
    // Contiguous's slowest rank (C - 1) against the mean 2C + 1: (4C - 1)/(2C + 1).
    EXPECT_EQ(slowest, 4 * cp - 1);
    EXPECT_EQ(slowest * cp * (2 * cp + 1), (4 * cp - 1) * total_contiguous);
  }
  // C = 4: rank 3 does 15 products, the mean is 9; zig-zag gives each rank 9.
  EXPECT_EQ(causal_block_products(SequenceLayout::contiguous, 4, 3), 15);
  EXPECT_EQ(causal_block_products(SequenceLayout::contiguous, 4, 0), 3);
}

TEST(SequenceLayout, RefusesASequenceThatDoesNotSplitIntoTwoCChunks) {
  for (const SequenceLayout layout : kLayouts) {
    try {
      token_positions(layout, 12, 4, 0);  // 12 % 8 != 0
      FAIL() << "expected ConfigError";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("S = 12"), std::string::npos) << what;
      EXPECT_NE(what.find("C = 4"), std::string::npos) << what;
    }
    EXPECT_THROW(shard_sequence(Tensor::zeros({1, 6, 1}), layout, 2, 0), ConfigError);
    EXPECT_THROW(chunks_of(layout, 2, 2), ConfigError);
  }
  EXPECT_THROW(unshard_sequence({Tensor::zeros({1, 2, 1})}, SequenceLayout::zigzag, 2),
               ConfigError);
}

}  // namespace
}  // namespace course::test
