// rng.h: a small seeded random number generator (PCG32), the same on every platform.
//
//   Rng rng(/*seed=*/42);
//   float w = rng.uniform(-0.1f, 0.1f);
//   int64_t k = rng.below(10);        // 0..9, unbiased
//
// Why not <random>: std::uniform_real_distribution and friends are implementation-defined,
// so a seed would give different initial weights or shuffles with libstdc++ and libc++.
// Training runs in this course must be reproducible from a seed, and ranks of a
// distributed job must agree on a shuffle, so the generator and its conversions to floats
// and ranges are written out here.
//
// PCG32 (O'Neill, 2014): 64-bit LCG state, 32-bit output through a xorshift and a
// random rotation. `stream` selects one of 2^63 independent sequences for the same seed.
//
// Thread safety: an Rng is a value; give each thread its own.
#pragma once

#include <cstdint>

namespace course {

/// A PCG32 generator (see the top of this file): the same seed and stream give the
/// same numbers on every machine.
class Rng {
 public:
  /// `seed` picks the starting point; `stream` picks one of 2^63 independent sequences.
  explicit Rng(uint64_t seed, uint64_t stream = 0) : inc_((stream << 1u) | 1u) {
    next_u32();
    state_ += seed;
    next_u32();
  }

  /// 32 uniformly distributed bits.
  uint32_t next_u32() {
    const uint64_t old = state_;
    state_ = old * 6364136223846793005ULL + inc_;
    const auto xorshifted = static_cast<uint32_t>(((old >> 18u) ^ old) >> 27u);
    const auto rot = static_cast<uint32_t>(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
  }

  /// 64 uniformly distributed bits (two next_u32(), high word first).
  uint64_t next_u64() {
    const uint64_t hi = next_u32();
    return (hi << 32) | next_u32();
  }

  /// Uniform in [0, 1): 24 random bits, so every value is an exact float.
  float uniform01() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }

  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform01(); }

  /// Uniform integer in [0, n), without modulo bias (rejection sampling).
  /// REQUIRES: n >= 1.
  uint64_t below(uint64_t n) {
    if (n <= 1) return 0;
    // The largest multiple of n that fits in 64 bits: draws at or above it are rejected.
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r = next_u64();
    while (r >= limit) r = next_u64();
    return r % n;
  }

 private:
  uint64_t state_ = 0;
  uint64_t inc_;
};

}  // namespace course
