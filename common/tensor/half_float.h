// half_float.h: the two 16-bit float formats, IEEE binary16 (fp16) and bfloat16 (bf16), and
// their conversions to and from float32, one value at a time or 8 at a time with the CPU's
// own instructions (F16C for fp16, AVX2 for bf16) where it has them: the same values.
//
//   std::vector<uint16_t> h(x.size());
//   to_halves(x, 1.0f / world, h, HalfKind::fp16);     // x / world, rounded to fp16
//   from_halves(h, x, HalfKind::fp16);
//
// fp16: 5 exponent bits, 10 stored mantissa bits, largest 65504, subnormals down to 2^-24.
// bf16: float32's 8 exponent bits (its range), 7 stored mantissa bits. Rounding is to the
// nearest, ties to even; beyond the range: +-inf; NaN stays NaN.
//
// The *_raw forms read and write halves as raw bytes (two per value, this machine's byte
// order, through memcpy): a buffer of floats that carries halves over the wire (lesson 14's
// all_reduce_half) is then never read through a pointer of another type.
//
// What this is not: a half-precision tensor type (the course's tensors are float32; these
// formats exist only on the wire).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace course {

enum class HalfKind { fp16, bf16 };
/// "fp16" or "bf16".
const char* half_name(HalfKind kind);
/// `x` rounded to the nearest value of `kind` (ties to even); beyond the range: +-inf;
/// NaN stays NaN. fp16 keeps subnormals down to 2^-24.
uint16_t float_to_half(float x, HalfKind kind);
/// The exact float32 value of `h`.
float half_to_float(uint16_t h, HalfKind kind);
/// dst[i] = float_to_half(src[i] * scale) for every i (the product rounded to float32
/// first). REQUIRES: dst.size() == src.size() (else a ConfigError). On x86-64 CPUs with
/// F16C, fp16 uses the CPU's own conversion (the same values, 8 at a time); elsewhere the
/// loop above.
void to_halves(std::span<const float> src, float scale, std::span<uint16_t> dst, HalfKind kind);
/// dst[i] = half_to_float(src[i]) for every i. REQUIRES: dst.size() == src.size().
void from_halves(std::span<const uint16_t> src, std::span<float> dst, HalfKind kind);

/// to_halves on raw bytes: dst (2n bytes) = the halves of src[i] * scale.
void floats_to_raw_halves(const float* src, size_t n, float scale, unsigned char* dst,
                          HalfKind kind);
/// from_halves on raw bytes: dst[i] = the value of the i-th half at src (2n bytes).
void raw_halves_to_floats(const unsigned char* src, size_t n, float* dst, HalfKind kind);
/// acc[i] += the value of the i-th half at src (2n bytes), in float32.
void add_raw_halves(const unsigned char* src, size_t n, float* acc, HalfKind kind);

/// Whether this CPU runs AVX2 (false off x86-64): the 8-wide kernels' test.
bool cpu_has_avx2();

}  // namespace course
