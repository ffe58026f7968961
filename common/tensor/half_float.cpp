// half_float.cpp: the 16-bit float formats and their conversions (see half_float.h).
#include "half_float.h"

#include <cmath>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "error.h"

namespace course {

const char* half_name(HalfKind kind) {
  return kind == HalfKind::fp16 ? "fp16" : "bf16";
}

namespace {

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

float float_of(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof(x));
  return x;
}

uint16_t float_to_fp16(float x) {
  const uint32_t b = bits_of(x);
  const auto sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const uint32_t magnitude = b & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal, m * 2^-24. Scaling by 2^24 is exact; nearbyint rounds to
    // the nearest integer, ties to even (the default rounding mode). m = 1024 is 2^-14,
    // the smallest normal, which the same bits encode.
    const float scaled = float_of(magnitude) * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  const uint32_t mantissa = magnitude & 0x7fffffu;
  const uint32_t exponent = (magnitude >> 23) - 127 + 15;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fffu;                  // the 13 bits dropped
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry may bump the exponent
  return sign | static_cast<uint16_t>(h);
}

float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    const float value = static_cast<float>(mantissa) * (1.0f / 16777216.0f);
    return float_of(sign | bits_of(value));
  }
  if (exponent == 31) return float_of(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  return float_of(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

uint16_t float_to_bf16(float x) {
  const uint32_t b = bits_of(x);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // NaN
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate.
  // Past the largest bf16 the carry reaches the exponent and gives inf, as it should.
  const uint32_t rounded = b + 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

}  // namespace

uint16_t float_to_half(float x, HalfKind kind) {
  return kind == HalfKind::fp16 ? float_to_fp16(x) : float_to_bf16(x);
}

float half_to_float(uint16_t h, HalfKind kind) {
  return kind == HalfKind::fp16 ? fp16_to_float(h) : float_of(static_cast<uint32_t>(h) << 16);
}

namespace {

// Raw 16-bit values at `bytes` (two per value, this machine's byte order): read and written
// with memcpy, so a buffer of floats carrying halves (the all_to_all's) is never read
// through a pointer of another type.
uint16_t load_half(const unsigned char* bytes, size_t i) {
  uint16_t h;
  std::memcpy(&h, bytes + 2 * i, sizeof(h));
  return h;
}

void store_half(unsigned char* bytes, size_t i, uint16_t h) {
  std::memcpy(bytes + 2 * i, &h, sizeof(h));
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COURSE_HAVE_F16C 1  // and AVX2 for bf16
// The CPU's conversions (F16C, with AVX): round to nearest even, subnormals, inf and NaN as
// float_to_fp16 (a NaN may keep more of its payload: still a NaN).
__attribute__((target("avx,f16c"))) size_t to_fp16_f16c(const float* src, size_t n, float scale,
                                                        unsigned char* dst) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src + i), s);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t add_fp16_f16c(const unsigned char* src, size_t n,
                                                         float* acc) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_cvtph_ps(h)));
  }
  return i;
}

__attribute__((target("avx,f16c"))) size_t from_fp16_f16c(const unsigned char* src, size_t n,
                                                          float* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  return i;
}

// bf16 is float32's upper half, so AVX2's integer lanes convert it 8 at a time, with the
// rounding and NaN rule of float_to_bf16 (the same bits).
__attribute__((target("avx2"))) size_t to_bf16_avx2(const float* src, size_t n, float scale,
                                                    unsigned char* dst) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i half_ulp = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i b = _mm256_castps_si256(_mm256_mul_ps(_mm256_loadu_ps(src + i), s));
    const __m256i upper = _mm256_srli_epi32(b, 16);
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(_mm256_add_epi32(b, half_ulp), _mm256_and_si256(upper, one)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, magnitude), inf);
    const __m256i h = _mm256_blendv_epi8(rounded, _mm256_or_si256(upper, quiet), nan);
    // Eight values below 2^16 in 32-bit lanes, packed to 16 bits in order.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * i),
                     _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
  }
  return i;
}

__attribute__((target("avx2"))) __m256 load_bf16_avx2(const unsigned char* src) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx2"))) size_t add_bf16_avx2(const unsigned char* src, size_t n,
                                                     float* acc) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), load_bf16_avx2(src + 2 * i)));
  }
  return i;
}

__attribute__((target("avx2"))) size_t from_bf16_avx2(const unsigned char* src, size_t n,
                                                      float* dst) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_bf16_avx2(src + 2 * i));
  return i;
}

// AVX (which __builtin_cpu_supports checks the OS saves) and F16C (CPUID leaf 1, ECX bit
// 29: clang's __builtin_cpu_supports does not know its name).
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
    return __builtin_cpu_supports("avx") && (ecx & (1u << 29)) != 0;
  }();
  return has;
}
#endif

}  // namespace

// dst = halves of src * scale (dst: raw bytes).
void floats_to_raw_halves(const float* src, size_t n, float scale, unsigned char* dst,
                          HalfKind kind) {
  size_t i = 0;
#ifdef COURSE_HAVE_F16C
  if (kind == HalfKind::fp16 && cpu_has_f16c()) i = to_fp16_f16c(src, n, scale, dst);
  if (kind == HalfKind::bf16 && cpu_has_avx2()) i = to_bf16_avx2(src, n, scale, dst);
#endif
  for (; i < n; ++i) store_half(dst, i, float_to_half(src[i] * scale, kind));
}

// dst = the values of the halves at src (raw bytes).
void raw_halves_to_floats(const unsigned char* src, size_t n, float* dst, HalfKind kind) {
  size_t i = 0;
#ifdef COURSE_HAVE_F16C
  if (kind == HalfKind::fp16 && cpu_has_f16c()) i = from_fp16_f16c(src, n, dst);
  if (kind == HalfKind::bf16 && cpu_has_avx2()) i = from_bf16_avx2(src, n, dst);
#endif
  for (; i < n; ++i) dst[i] = half_to_float(load_half(src, i), kind);
}

// acc += the values of the halves at src (raw bytes).
void add_raw_halves(const unsigned char* src, size_t n, float* acc, HalfKind kind) {
  size_t i = 0;
#ifdef COURSE_HAVE_F16C
  if (kind == HalfKind::fp16 && cpu_has_f16c()) i = add_fp16_f16c(src, n, acc);
  if (kind == HalfKind::bf16 && cpu_has_avx2()) i = add_bf16_avx2(src, n, acc);
#endif
  for (; i < n; ++i) acc[i] += half_to_float(load_half(src, i), kind);
}

namespace {

void check_same_size(size_t a, size_t b, const char* what) {
  if (a != b) {
    throw ConfigError(std::string(what) + ": " + std::to_string(a) + " values in, room for " +
                      std::to_string(b) + " out");
  }
}

}  // namespace

void to_halves(std::span<const float> src, float scale, std::span<uint16_t> dst, HalfKind kind) {
  check_same_size(src.size(), dst.size(), "to_halves");
  floats_to_raw_halves(src.data(), src.size(), scale, reinterpret_cast<unsigned char*>(dst.data()),
                       kind);
}

void from_halves(std::span<const uint16_t> src, std::span<float> dst, HalfKind kind) {
  check_same_size(src.size(), dst.size(), "from_halves");
  raw_halves_to_floats(reinterpret_cast<const unsigned char*>(src.data()), src.size(), dst.data(),
                       kind);
}

bool cpu_has_avx2() {
#ifdef COURSE_HAVE_F16C
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

}  // namespace course
