// comm_hooks_given.cpp: lesson 14, given: the 16-bit formats, the half all-reduce, the
// hooks' wrappers and PowerSGD's bookkeeping (its state per bucket, the Qs' start, the
// counters). The compression itself is the exercise (comm_hooks.cpp).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "comm_hooks.h"
#include "error.h"
#include "rng.h"
#include "tensor_ops.h"

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

bool cpu_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
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

namespace {

// The half all-reduce's buffers, kept per thread (the hooks' runner, a test's rank) and
// grown as needed: fresh vectors of a bucket's size would cost their page faults on every
// call, as much as the sums themselves.
struct HalfScratch {
  std::vector<float> out, in, mine, sum;
  std::vector<uint16_t> halves;  // one chunk, as pack fills it and unpack reads it
};

HalfScratch& half_scratch() {
  thread_local HalfScratch scratch;
  return scratch;
}

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

void all_reduce_half(ProcessGroup& group, size_t count, HalfKind kind, const PackHalves& pack,
                     const UnpackHalves& unpack) {
  const auto world = static_cast<size_t>(group.size());
  const auto me = static_cast<size_t>(group.rank());
  if (count == 0) return;
  const auto round_up = [&](size_t n) { return (n + 2 * world - 1) / (2 * world) * (2 * world); };
  // Chunks of `chunk` values (a multiple of 2N); the last one holds the rest, padded with
  // zeros to a multiple of 2N. In chunk c, rank j's slice is per(c) values (even, so a
  // slice is whole floats). Chunk c lives at c * chunk / 2 floats in `out` and `in`, its
  // summed slice at c * chunk / N / 2 in `mine`.
  const size_t chunk = round_up(std::min(count, kHalfChunkValues));
  const size_t chunks = (count + chunk - 1) / chunk;
  const auto values_in = [&](size_t c) { return std::min(chunk, count - c * chunk); };
  const auto per = [&](size_t c) { return round_up(values_in(c)) / world; };
  HalfScratch& s = half_scratch();
  grow(s.out, chunks * chunk / 2);
  grow(s.in, chunks * chunk / 2);
  grow(s.mine, chunks * chunk / world / 2);
  grow(s.sum, chunk / world);
  if (s.halves.size() < chunk) s.halves.resize(chunk);
  const auto out_of = [&](size_t c) {
    return std::span(s.out).subspan(c * chunk / 2, per(c) * world / 2);
  };
  const auto in_of = [&](size_t c) {
    return std::span(s.in).subspan(c * chunk / 2, per(c) * world / 2);
  };
  const auto mine_of = [&](size_t c) {
    return std::span(s.mine).subspan(c * chunk / world / 2, per(c) / 2);
  };
  const auto slice = [&](std::span<float> whole, size_t c, size_t j) {
    return whole.subspan(j * per(c) / 2, per(c) / 2);
  };
  const auto bytes = [](std::span<float> v) { return reinterpret_cast<unsigned char*>(v.data()); };
  const std::span<uint16_t> halves(s.halves);
  if (world == 1) {  // nothing to exchange: the sums are the values
    for (size_t c = 0; c < chunks; ++c) {
      pack(c * chunk, halves.first(values_in(c)));
      unpack(c * chunk, halves.first(values_in(c)));
    }
    return;
  }
  std::vector<WorkPtr> sends;  // every isend, waited for before the scratch is used again
  std::vector<std::vector<WorkPtr>> scattered(chunks), gathered(chunks);
  const auto exchange = [&](std::vector<WorkPtr>& received, size_t c,
                            const std::function<std::span<float>(size_t)>& to_send) {
    for (size_t j = 0; j < world; ++j) {
      if (j == me) continue;
      received.push_back(group.irecv(slice(in_of(c), c, j), static_cast<int>(j), kHalfTag));
      sends.push_back(group.isend(to_send(j), static_cast<int>(j), kHalfTag));
    }
  };
  // 1. Each chunk goes out as soon as it is packed, slice j to rank j (a reduce-scatter's
  //    traffic). A peer's sends queue on its connection, so the wire carries them back to
  //    back while this thread packs the next chunk and sums the first.
  for (size_t c = 0; c < chunks; ++c) {
    pack(c * chunk, halves.first(values_in(c)));
    std::memcpy(bytes(out_of(c)), halves.data(), values_in(c) * sizeof(uint16_t));
    std::memset(bytes(out_of(c)) + values_in(c) * 2, 0, (per(c) * world - values_in(c)) * 2);
    exchange(scattered[c], c, [&](size_t j) { return slice(out_of(c), c, j); });
  }
  // 2. As each chunk arrives: my slice summed over ranks in rank order in float32 (mine
  //    from `out`, theirs from `in`), rounded once, and sent to every rank (an
  //    all-gather's traffic: (N-1)/N of the data on the wire).
  for (size_t c = 0; c < chunks; ++c) {
    for (const WorkPtr& w : scattered[c]) w->wait();
    const size_t n = per(c);
    for (size_t j = 0; j < world; ++j) {
      const unsigned char* part = bytes(slice(j == me ? out_of(c) : in_of(c), c, j == me ? me : j));
      if (j == 0) {
        raw_halves_to_floats(part, n, s.sum.data(), kind);
      } else {
        add_raw_halves(part, n, s.sum.data(), kind);
      }
    }
    floats_to_raw_halves(s.sum.data(), n, 1.0f, bytes(mine_of(c)), kind);
    std::memcpy(slice(in_of(c), c, me).data(), mine_of(c).data(), n * 2);
    exchange(gathered[c], c, [&](size_t /*j*/) { return mine_of(c); });
  }
  // 3. Each chunk's sums to the caller as they arrive.
  for (size_t c = 0; c < chunks; ++c) {
    for (const WorkPtr& w : gathered[c]) w->wait();
    std::memcpy(halves.data(), in_of(c).data(), values_in(c) * sizeof(uint16_t));
    unpack(c * chunk, halves.first(values_in(c)));
  }
  for (const WorkPtr& w : sends) w->wait();
}

void all_reduce_half(ProcessGroup& group, std::span<uint16_t> data, HalfKind kind) {
  all_reduce_half(
      group, data.size(), kind,
      [&](size_t first, std::span<uint16_t> halves) {
        std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(first), halves.size(),
                    halves.begin());
      },
      [&](size_t first, std::span<const uint16_t> sums) {
        std::copy(sums.begin(), sums.end(), data.begin() + static_cast<std::ptrdiff_t>(first));
      });
}

CommHook allreduce_hook(ProcessGroup& group) {
  return [&group](GradBucket& bucket) {
    scale_(bucket.buffer, 1.0f / static_cast<float>(group.size()));
    return group.all_reduce_async(bucket.buffer.device_span(), ReduceOp::SUM);
  };
}

CommHook compress_hook(ProcessGroup& group, HalfKind kind, SerialExecutor& runner) {
  return [&group, kind, &runner](GradBucket& bucket) {
    Tensor buffer = bucket.buffer;
    std::string what = half_name(kind);
    what += " compression of bucket ";
    what += std::to_string(bucket.index);
    return runner.submit([&group, buffer, kind] { compress_and_all_reduce(group, buffer, kind); },
                         std::move(what), /*run_on_wait=*/true);
  };
}

namespace {

// Eight floats as one value (GCC and Clang vector extensions): two SSE registers by
// default, one AVX register in the avx2 clone below (moved with memcpy, never returned).
typedef float F8 __attribute__((vector_size(32)));

// For `rows` rows of k values: error = m - p qᵀ, m = p qᵀ, with qt = qᵀ ([r, k]): a row of
// p qᵀ is the rows of qt scaled by that row's r coefficients and added, 8 values at a time.
// Only multiplies and adds, in the same order at any vector width (no fused multiply-add):
// ranks on different CPUs write the same bits.
[[gnu::always_inline]] inline void low_rank_rows(float* m, float* error, const float* p,
                                                 const float* qt, int64_t rows, int64_t k,
                                                 int64_t r) {
  for (int64_t i = 0; i < rows; ++i) {
    float* mine = m + i * k;
    float* lost = error + i * k;
    const float* coef = p + i * r;
    int64_t j = 0;
    for (; j + 8 <= k; j += 8) {
      F8 kept = {}, row_of_qt, before;
      for (int64_t c = 0; c < r; ++c) {
        std::memcpy(&row_of_qt, qt + c * k + j, sizeof(F8));
        kept += coef[c] * row_of_qt;
      }
      std::memcpy(&before, mine + j, sizeof(F8));
      const F8 left = before - kept;
      std::memcpy(lost + j, &left, sizeof(F8));
      std::memcpy(mine + j, &kept, sizeof(F8));
    }
    for (; j < k; ++j) {
      float kept = 0;
      for (int64_t c = 0; c < r; ++c) kept += coef[c] * qt[c * k + j];
      lost[j] = mine[j] - kept;
      mine[j] = kept;
    }
  }
}

void low_rank_rows_default(float* m, float* error, const float* p, const float* qt, int64_t rows,
                           int64_t k, int64_t r) {
  low_rank_rows(m, error, p, qt, rows, k, r);
}

#ifdef COURSE_HAVE_F16C
__attribute__((target("avx2"))) void low_rank_rows_avx2(float* m, float* error, const float* p,
                                                        const float* qt, int64_t rows, int64_t k,
                                                        int64_t r) {
  low_rank_rows(m, error, p, qt, rows, k, r);
}
#endif

}  // namespace

void write_low_rank(const Tensor& m, const Tensor& p, const Tensor& q, const Tensor& error) {
  const bool shapes_ok = m.dim() == 2 && p.dim() == 2 && q.dim() == 2 &&
                         error.shape() == m.shape() && p.shape()[0] == m.shape()[0] &&
                         q.shape()[0] == m.shape()[1] && q.shape()[1] == p.shape()[1];
  if (!shapes_ok) {
    throw ConfigError("write_low_rank: m " + shape_str(m.shape()) + ", p " + shape_str(p.shape()) +
                      ", q " + shape_str(q.shape()) + ", error " + shape_str(error.shape()) +
                      ": needs m and error [n, k], p [n, r], q [k, r]");
  }
  const int64_t k = m.shape()[1], r = p.shape()[1];
  if (m.numel() == 0) return;
  // One pass over m and error: every row of p qᵀ is made in registers from qᵀ (r rows of
  // k floats, small enough to stay in cache) and written straight to where it goes.
  std::vector<float> qt(static_cast<size_t>(k * r));
  const float* q_rows = q.data();
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t c = 0; c < r; ++c) qt[static_cast<size_t>(c * k + j)] = q_rows[j * r + c];
  }
  auto rows_kernel = low_rank_rows_default;
#ifdef COURSE_HAVE_F16C
  if (cpu_has_avx2()) rows_kernel = low_rank_rows_avx2;
#endif
  rows_kernel(m.data(), error.data(), p.data(), qt.data(), m.shape()[0], k, r);
}

PowerSgdPlan plan_powersgd(const GradBucket& bucket, const PowerSgdOptions& options) {
  PowerSgdPlan plan;
  for (size_t j = 0; j < bucket.params.size(); ++j) {
    const Shape& shape = bucket.shapes[j];
    const int64_t numel = shape_numel(shape);
    const int64_t n = shape.empty() ? 1 : shape[0];
    const int64_t m = n == 0 ? 0 : numel / n;
    const int64_t r = std::min({n, m, static_cast<int64_t>(options.rank)});
    const bool compress = r > 0 && static_cast<double>(n) * static_cast<double>(m) >=
                                       options.min_compression_rate * static_cast<double>(r) *
                                           static_cast<double>(n + m);
    if (compress) {
      plan.compressed.push_back({j, n, m, r});
      plan.p_elements += n * r;
      plan.q_elements += m * r;
    } else {
      plan.uncompressed.push_back(j);
      plan.uncompressed_elements += numel;
    }
  }
  return plan;
}

PowerSgd::PowerSgd(ProcessGroup& group, SerialExecutor& runner, PowerSgdOptions options)
    : group_(group), runner_(runner), options_(options) {
  if (options_.rank < 1) {
    throw ConfigError("rank " + std::to_string(group.rank()) +
                      ": PowerSGD needs a matrix approximation rank of at least 1, not " +
                      std::to_string(options_.rank));
  }
}

CommHook PowerSgd::hook() {
  return [this](GradBucket& bucket) {
    GradBucket copy = bucket;  // the views share the bucket's storage
    return runner_.submit([this, copy]() mutable { reduce_bucket(copy); },
                          "PowerSGD of bucket " + std::to_string(bucket.index),
                          /*run_on_wait=*/true);
  };
}

const Tensor& PowerSgd::error(size_t index) const {
  static const Tensor kNone;
  const auto it = states_.find(index);
  return it == states_.end() ? kNone : it->second.error;
}

PowerSgd::BucketState& PowerSgd::state_for(const GradBucket& bucket) {
  auto it = states_.find(bucket.index);
  if (it != states_.end()) {
    if (it->second.params != bucket.params || it->second.error.numel() != bucket.buffer.numel()) {
      throw ConfigError("rank " + std::to_string(group_.rank()) + ": PowerSGD: bucket " +
                        std::to_string(bucket.index) + " now holds other parameters (" +
                        std::to_string(bucket.buffer.numel()) + " elements, was " +
                        std::to_string(it->second.error.numel()) +
                        "): the buckets changed after PowerSGD's first compressed step, and "
                        "its error and Qs belong to the old ones; start compressing after the "
                        "Reducer's rebuild (--start-iter 2 or more)");
    }
    return it->second;
  }
  BucketState state;
  state.params = bucket.params;
  state.plan = plan_powersgd(bucket, options_);
  state.error = Tensor::zeros({bucket.buffer.numel()});
  state.p_flat = Tensor::zeros({state.plan.p_elements});
  state.q_flat = Tensor::zeros({state.plan.q_elements});
  int64_t p_at = 0, q_at = 0;
  for (const PowerSgdMatrix& mat : state.plan.compressed) {
    state.ps.push_back(state.p_flat.rows(p_at, mat.n * mat.rank).reshape({mat.n, mat.rank}));
    state.qs.push_back(state.q_flat.rows(q_at, mat.m * mat.rank).reshape({mat.m, mat.rank}));
    p_at += mat.n * mat.rank;
    q_at += mat.m * mat.rank;
  }
  return states_.emplace(bucket.index, std::move(state)).first->second;
}

void PowerSgd::start_qs(BucketState& state, size_t bucket_index) {
  if (!state.qs_ready || !options_.warm_start) {
    // The same numbers on every rank: the seed, the step and the bucket pick the stream.
    Rng rng(options_.seed + static_cast<uint64_t>(iteration_) * 0x9e3779b97f4a7c15ull,
            bucket_index);
    for (float& v : state.q_flat.span()) v = rng.uniform(-1.0f, 1.0f);
    state.qs_ready = true;
  }
  for (const Tensor& q : state.qs) orthogonalize(q);
}

void PowerSgd::end_bucket(const GradBucket& bucket, int64_t sent_elements) {
  sent_this_iteration_ += sent_elements;
  if (bucket.is_last) {
    last_sent_ = sent_this_iteration_;
    sent_this_iteration_ = 0;
    ++iteration_;
  }
}

Tensor PowerSgd::matrix_view(const Tensor& flat, const GradBucket& bucket,
                             const PowerSgdMatrix& matrix) {
  return flat.rows(bucket.offsets[matrix.param], matrix.n * matrix.m).reshape({matrix.n, matrix.m});
}

}  // namespace course
