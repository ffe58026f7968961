// precision_test.cpp: lesson 18, the given precisions (precision.h): round_to is lesson 14's
// float_to_half then half_to_float, with fp16's subnormals, overflow and ties and bf16's
// range; the cast rounds its forward and its backward; count_flushed counts what a 16-bit
// gradient loses.
//
//   ./build/solutions/test_18 --gtest_filter='Precision*'
#include "precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "error.h"
#include "half_float.h"
#include "ops.h"

namespace course {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Values over the whole float range, each index its own: mantissas 1 + k/37 (most not
// representable in 16 bits), exponents from -30 to 20, both signs.
std::vector<float> spread_values(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) {
    const float mantissa = 1.0f + static_cast<float>(i % 37) / 37.0f;
    const int exponent = -30 + (i * 7) % 51;
    v.push_back((i % 2 ? -1.0f : 1.0f) * std::ldexp(mantissa, exponent));
  }
  return v;
}

TEST(PrecisionNames, ParseNameAndBytes) {
  EXPECT_EQ(parse_precision("fp32"), Precision::fp32);
  EXPECT_EQ(parse_precision("bf16"), Precision::bf16);
  EXPECT_EQ(parse_precision("fp16"), Precision::fp16);
  for (const Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  }
  EXPECT_EQ(element_bytes(Precision::fp32), 4);
  EXPECT_EQ(element_bytes(Precision::bf16), 2);
  EXPECT_EQ(element_bytes(Precision::fp16), 2);
  EXPECT_EQ(half_kind(Precision::bf16), HalfKind::bf16);
  EXPECT_EQ(half_kind(Precision::fp16), HalfKind::fp16);
  EXPECT_THROW(half_kind(Precision::fp32), ConfigError);
  try {
    parse_precision("fp8");
    FAIL() << "fp8 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();
  }
}

TEST(PrecisionRoundTo, MatchesLesson14sConversionsForBothFormats) {
  const std::vector<float> values = spread_values(400);
  for (const auto& [p, kind] :
       {std::pair{Precision::bf16, HalfKind::bf16}, std::pair{Precision::fp16, HalfKind::fp16}}) {
    int changed = 0;
    for (const float x : values) {
      const float expected = half_to_float(float_to_half(x, kind), kind);
      EXPECT_EQ(round_to(x, p), expected) << precision_name(p) << " of " << x;
      changed += expected != x;
    }
    EXPECT_GT(changed, 300) << precision_name(p) << ": the inputs should mostly need rounding";
  }
  for (const float x : values) EXPECT_EQ(round_to(x, Precision::fp32), x);
}

TEST(PrecisionRoundTo, Fp16SubnormalsOverflowAndTies) {
  const Precision h = Precision::fp16;
  const float tiny = std::ldexp(1.0f, -24);  // fp16's smallest subnormal
  EXPECT_EQ(round_to(tiny, h), tiny);
  EXPECT_EQ(round_to(3 * tiny, h), 3 * tiny);               // subnormals are kept exactly
  EXPECT_EQ(round_to(std::ldexp(1.0f, -25), h), 0.0f);      // half of it: a tie, to even 0
  EXPECT_EQ(round_to(std::ldexp(1.5f, -25), h), tiny);      // above the tie: up
  EXPECT_EQ(round_to(std::ldexp(1.5f, -24), h), 2 * tiny);  // 1.5 ulp: a tie, to even 2
  EXPECT_EQ(round_to(std::ldexp(2.5f, -24), h), 2 * tiny);  // 2.5 ulp: a tie, to even 2
  EXPECT_EQ(round_to(1e-8f, h), 0.0f);
  EXPECT_EQ(round_to(-1e-8f, h), 0.0f);
  EXPECT_EQ(round_to(65504.0f, h), 65504.0f);  // the largest
  EXPECT_EQ(round_to(65519.0f, h), 65504.0f);  // below the midpoint to 65536
  EXPECT_EQ(round_to(65520.0f, h), kInf);      // the midpoint: to even, inf
  EXPECT_EQ(round_to(-1e5f, h), -kInf);
  EXPECT_EQ(round_to(1.0f + std::ldexp(1.0f, -11), h), 1.0f);  // a tie at 1: to even
  EXPECT_EQ(round_to(1.0f + std::ldexp(3.0f, -11), h), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(round_to(std::nanf(""), h)));
}

TEST(PrecisionRoundTo, Bf16KeepsFloat32sRangeWithSevenMantissaBits) {
  const Precision b = Precision::bf16;
  EXPECT_GT(round_to(1e-8f, b), 0.0f);
  EXPECT_NEAR(round_to(1e-8f, b), 1e-8f, 1e-8f / 128);
  EXPECT_NEAR(round_to(1e30f, b) / 1e30f, 1.0f, 1.0f / 256);
  EXPECT_TRUE(std::isfinite(round_to(1e38f, b)));
  EXPECT_EQ(round_to(std::numeric_limits<float>::max(), b), kInf);  // rounds past bf16's max
  EXPECT_EQ(round_to(1.0f + std::ldexp(1.0f, -8), b), 1.0f);        // a tie: to even
  EXPECT_EQ(round_to(1.0f + std::ldexp(3.0f, -8), b), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(round_to(1.0f + 1e-4f, b), 1.0f);  // why master weights (mixed_precision.h)
  EXPECT_EQ(round_to(65520.0f, b), 65536.0f);  // no overflow where fp16 has one
  EXPECT_TRUE(std::isnan(round_to(std::nanf(""), b)));
}

TEST(PrecisionRoundTo, InPlaceRoundsEveryElement) {
  const std::vector<float> values = spread_values(64);
  for (const Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    const Tensor t = Tensor::from_vector({8, 8}, values);
    round_to_(t, p);
    const std::vector<float> got = t.to_vector();
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(got[i], round_to(values[i], p)) << precision_name(p) << " element " << i;
    }
  }
}

TEST(PrecisionCast, ForwardRoundsAndBackwardRoundsTheGradient) {
  const std::vector<float> values = spread_values(24);
  std::vector<float> seed;
  for (int i = 0; i < 24; ++i) seed.push_back(std::ldexp(1.0f + i / 29.0f, -20 - i));
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    const Variable x(Tensor::from_vector({4, 6}, values), /*requires_grad=*/true);
    const Variable y = cast(x, p);
    ASSERT_NE(y.grad_fn(), nullptr);
    EXPECT_EQ(y.grad_fn()->name(), "CastBackward");
    const std::vector<float> forward = y.data().to_vector();
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(forward[i], round_to(values[i], p));
    EXPECT_EQ(x.data().to_vector(), values) << "the cast must not round its input in place";
    y.backward(Tensor::from_vector({4, 6}, seed));
    const std::vector<float> grad = x.grad().to_vector();
    for (size_t i = 0; i < seed.size(); ++i) {
      EXPECT_EQ(grad[i], round_to(seed[i], p)) << precision_name(p) << " element " << i;
    }
  }
}

TEST(PrecisionCast, AGradientOf1e8SurvivesBf16AndIsZeroInFp16) {
  for (const Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    const Variable x(Tensor::from_vector({3}, {0.5f, -2.0f, 3.0f}), /*requires_grad=*/true);
    sum(scale(cast(x, p), 1e-8f)).backward();
    const std::vector<float> g = x.grad().to_vector();
    for (const float v : g) {
      if (p == Precision::fp16) {
        EXPECT_EQ(v, 0.0f) << "fp16 holds nothing below 2^-24";
      } else {
        EXPECT_NEAR(v, 1e-8f, 1e-8f / 128) << precision_name(p);
      }
    }
  }
}

TEST(PrecisionCast, Fp32IsTheInputItself) {
  const Variable x(Tensor::from_vector({2}, {0.1f, 0.2f}), /*requires_grad=*/true);
  const Variable y = cast(x, Precision::fp32);
  EXPECT_EQ(y.impl(), x.impl());
}

TEST(PrecisionCountFlushed, CountsUnderflowAndOverflowAgainstASerialCount) {
  // Gradients from 1e-11 to 1e5, zeros among them, in two tensors and an undefined one.
  std::vector<float> a, b;
  for (int i = 0; i < 90; ++i) {
    const float v = (i % 9 == 0) ? 0.0f : (i % 2 ? -1.0f : 1.0f) * std::pow(10.0f, -11 + i % 17);
    (i < 50 ? a : b).push_back(v);
  }
  const std::vector<Tensor> grads = {Tensor::from_vector({50}, a), Tensor(),
                                     Tensor::from_vector({5, 8}, b)};
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    for (const float s : {1.0f, 65536.0f}) {
      FlushCount expected;
      for (const std::vector<float>* part : {&a, &b}) {
        for (const float v : *part) {
          if (v == 0) continue;
          ++expected.nonzero;
          const HalfKind kind = half_kind(p);
          const float r = half_to_float(float_to_half(v * s, kind), kind);
          expected.flushed += r == 0;
          expected.overflow += std::isinf(r);
        }
      }
      const FlushCount got = count_flushed(grads, p, s);
      EXPECT_EQ(got.nonzero, expected.nonzero);
      EXPECT_EQ(got.flushed, expected.flushed) << precision_name(p) << " scale " << s;
      EXPECT_EQ(got.overflow, expected.overflow) << precision_name(p) << " scale " << s;
    }
  }
  const FlushCount unscaled = count_flushed(grads, Precision::fp16);
  const FlushCount scaled = count_flushed(grads, Precision::fp16, 65536.0f);
  EXPECT_EQ(unscaled.nonzero, 80);
  EXPECT_GT(unscaled.flushed, 0);
  EXPECT_LT(scaled.flushed, unscaled.flushed);
  EXPECT_GT(scaled.overflow, unscaled.overflow);
  EXPECT_EQ(count_flushed(grads, Precision::bf16).flushed, 0);
  EXPECT_DOUBLE_EQ(unscaled.flushed_fraction(), unscaled.flushed / 80.0);
  EXPECT_EQ(FlushCount{}.flushed_fraction(), 0.0);
}

}  // namespace
}  // namespace course
