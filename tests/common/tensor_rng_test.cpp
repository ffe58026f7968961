// tensor_rng_test.cpp: the seeded generator of common/data/rng.h (PCG32).
//
//   ./build/solutions/tests/common/test_common --gtest_filter='Rng*'
#include <gtest/gtest.h>

#include <vector>

#include "rng.h"

namespace course {
namespace {

// The reference outputs of O'Neill's pcg32-demo: pcg32_srandom(42, 54).
TEST(Rng, MatchesThePcg32ReferenceSequence) {
  Rng rng(42, 54);
  const std::vector<uint32_t> want{0xa15c02b7, 0x7b47f409, 0xba1d3330,
                                   0x83d2f293, 0xbfa4784b, 0xcbed606e};
  for (uint32_t w : want) EXPECT_EQ(rng.next_u32(), w);
}

TEST(Rng, SameSeedSameSequenceOtherSeedOrStreamAnother) {
  Rng a(7), b(7), c(8), d(7, 1);
  int same_c = 0, same_d = 0;
  for (int i = 0; i < 100; ++i) {
    const uint32_t x = a.next_u32();
    EXPECT_EQ(x, b.next_u32());
    same_c += x == c.next_u32();
    same_d += x == d.next_u32();
  }
  EXPECT_LT(same_c, 3);
  EXPECT_LT(same_d, 3);
}

TEST(Rng, UniformStaysInRangeAndCoversIt) {
  Rng rng(1);
  float lo = 1, hi = 0;
  double total = 0;
  for (int i = 0; i < 20000; ++i) {
    const float u = rng.uniform(-0.25f, 0.75f);
    ASSERT_GE(u, -0.25f);
    ASSERT_LT(u, 0.75f);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    total += u;
  }
  EXPECT_LT(lo, -0.24f);
  EXPECT_GT(hi, 0.74f);
  EXPECT_NEAR(total / 20000, 0.25, 0.01);
}

TEST(Rng, BelowIsInRangeAndRoughlyUniform) {
  Rng rng(3);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const uint64_t k = rng.below(7);
    ASSERT_LT(k, 7u);
    ++counts[k];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);  // about 4 standard deviations
  EXPECT_EQ(rng.below(1), 0u);
}

}  // namespace
}  // namespace course
