// comm_hooks_test.cpp: lesson 14: the 16-bit formats and the half all-reduce (given), fp16
// and bf16 compression against a serial oracle, Gram-Schmidt, PowerSGD (the plain mean at
// full rank, error feedback over steps, the warm-up), and the hooks inside lesson 10's DDP.
//
//   ./build/solutions/test_14
#include "comm_hooks.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "../collectives/group_factory.h"
#include "ddp_training.h"
#include "error.h"
#include "harness.h"
#include "hooked_ddp.h"
#include "hooks_bench.h"
#include "hooks_self_check.h"
#include "ops.h"
#include "optimizer.h"
#include "rng.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course::test {
namespace {

float fp16(float x) {
  return half_to_float(float_to_half(x, HalfKind::fp16), HalfKind::fp16);
}
float bf16(float x) {
  return half_to_float(float_to_half(x, HalfKind::bf16), HalfKind::bf16);
}

TEST(HalfFormats, RoundToNearestEvenWithTheRangesAndSpecialValues) {
  EXPECT_EQ(float_to_half(1.0f, HalfKind::fp16), 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f, HalfKind::fp16), 0xc000);
  EXPECT_EQ(float_to_half(65504.0f, HalfKind::fp16), 0x7bff);  // the largest
  EXPECT_EQ(fp16(65519.0f), 65504.0f);                         // below the halfway point
  EXPECT_TRUE(std::isinf(fp16(65520.0f)));                     // the tie rounds to even: inf
  EXPECT_TRUE(std::isinf(fp16(-1e6f)) && fp16(-1e6f) < 0);
  EXPECT_TRUE(std::isnan(fp16(std::numeric_limits<float>::quiet_NaN())));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to even (1); 1 + 3 * 2^-11 goes up.
  EXPECT_EQ(fp16(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(fp16(std::ldexp(1.0f, -24)), std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(fp16(std::ldexp(1.0f, -26)), 0.0f);
  EXPECT_EQ(fp16(3 * std::ldexp(1.0f, -25)), std::ldexp(1.0f, -23));  // a subnormal tie: even
  // bf16: float32's range, 8 significant bits.
  EXPECT_EQ(float_to_half(1.0f, HalfKind::bf16), 0x3f80);
  EXPECT_NEAR(bf16(1e30f), 1e30f, 1e30f * 4e-3f);
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8)), 1.0f);  // a tie: to even
  EXPECT_EQ(bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isinf(bf16(std::numeric_limits<float>::max())));
  EXPECT_TRUE(std::isnan(bf16(std::numeric_limits<float>::quiet_NaN())));
  // Every fp16 value survives the trip through float and back.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float x = half_to_float(bits, HalfKind::fp16);
    if (std::isnan(x)) continue;
    ASSERT_EQ(float_to_half(x, HalfKind::fp16), bits) << std::hex << h;
  }
}

// to_halves and from_halves (the CPU's F16C instructions for fp16, AVX2 for bf16, where it
// has them) give the scalar conversions' bits, on random bit patterns (every exponent:
// subnormals, overflow, ties; NaNs for bf16, whose rule for them is ours) and a scale, for
// lengths around the 8-wide blocks.
TEST(HalfFormats, TheVectorConversionsEqualTheScalarOnes) {
  Rng rng(3);
  for (HalfKind kind : {HalfKind::fp16, HalfKind::bf16}) {
    for (size_t n : {size_t{0}, size_t{7}, size_t{8}, size_t{9}, size_t{20000}}) {
      std::vector<float> src(n);
      for (float& x : src) {
        const auto bits = static_cast<uint32_t>(rng.next_u32());
        std::memcpy(&x, &bits, sizeof(x));
        if (std::isnan(x) && kind == HalfKind::fp16) x = 1.5f;  // F16C may keep more payload
      }
      std::vector<uint16_t> halves(n);
      to_halves(src, 0.25f, halves, kind);
      std::vector<float> back(n, -7.0f);
      from_halves(halves, back, kind);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(halves[i], float_to_half(src[i] * 0.25f, kind)) << half_name(kind) << " " << i;
        ASSERT_EQ(std::bit_cast<uint32_t>(back[i]),
                  std::bit_cast<uint32_t>(half_to_float(halves[i], kind)))
            << half_name(kind) << " " << i;
      }
    }
  }
  std::vector<float> three(3);
  std::vector<uint16_t> two(2);
  EXPECT_THROW(to_halves(three, 1.0f, two, HalfKind::fp16), ConfigError);
}

// all_reduce_half sums every rank's values (rank- and index-dependent, small integers that
// fp16 holds exactly, so the oracle is exact), for sizes that do not divide 2N, for one
// whole chunk (kHalfChunkValues) and for three chunks whose last holds 3 values, then a
// small size again (the per-thread scratch holds the bigger call's bytes).
TEST(AllReduceHalf, SumsEveryRanksValuesForAnySize) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(3, [&](RankContext& ctx) {
      auto group = make_group(backend, ctx);
      for (size_t n : {size_t{1}, size_t{7}, size_t{6}, kHalfChunkValues, 2 * kHalfChunkValues + 7,
                       size_t{5}}) {
        std::vector<uint16_t> data(n);
        for (size_t i = 0; i < n; ++i) {
          data[i] = float_to_half(static_cast<float>((i * 7 + static_cast<size_t>(ctx.rank)) % 50),
                                  HalfKind::fp16);
        }
        all_reduce_half(*group, data, HalfKind::fp16);
        size_t wrong = 0, first = n;
        for (size_t i = 0; i < n; ++i) {
          float want = 0;
          for (size_t r = 0; r < 3; ++r) want += static_cast<float>((i * 7 + r) % 50);
          if (half_to_float(data[i], HalfKind::fp16) != want) {
            ++wrong;
            first = std::min(first, i);
          }
        }
        EXPECT_EQ(wrong, 0u) << n << " values, the first wrong at " << first;
      }
    });
  }
}

// Rank r's element i on `world` ranks: mixed signs and sizes, and two kinds of element
// where the order of the division shows at any world size (hooks_self_check.cpp has the
// same): about 50000 on every rank, whose sum overflows fp16 unless each value is divided
// by N before the cast; and x / N = (1.375 + 4r) * 2^-24, an fp16 subnormal that rounds
// down once, where x cast first and then divided rounds up.
float value_of(int world, int rank, size_t i) {
  if (i % 89 == 1) return 50000.0f - 100.0f * static_cast<float>(rank);
  if (i % 83 == 2) {
    return (1.375f + 4.0f * static_cast<float>(rank)) * static_cast<float>(world) *
           std::ldexp(1.0f, -24);
  }
  return std::sin(0.37f * static_cast<float>(i) + static_cast<float>(rank)) *
             (1.0f + static_cast<float>(i % 7)) +
         static_cast<float>(rank) * 0.25f;
}

// The serial oracle of compress_and_all_reduce (default_hooks.h): each rank's x / N
// rounded to the format once, summed in rank order in float32, the sum rounded once.
float oracle(int world, size_t i, HalfKind kind) {
  float sum = 0;
  for (int r = 0; r < world; ++r) {
    const float part = value_of(world, r, i) / static_cast<float>(world);
    sum += half_to_float(float_to_half(part, kind), kind);
  }
  return half_to_float(float_to_half(sum, kind), kind);
}

// 2, 3 and 4 ranks: at 3 the division rounds, so dividing after the all-reduce or casting
// before dividing differs from the oracle on ordinary values too; at 2 and 4 the values
// near fp16's limit and the subnormal means tell.
TEST(CompressHook, EveryElementIsTheMeanAsTheHalfFormatRoundsIt) {
  for (const int world : {2, 3, 4}) {
    run_ranks(world, [&](RankContext& ctx) {
      auto group = make_group("tcp", ctx);
      for (HalfKind kind : {HalfKind::fp16, HalfKind::bf16}) {
        SCOPED_TRACE(std::string(half_name(kind)) + ", " + std::to_string(world) + " ranks");
        const size_t n = 4099;
        Tensor buffer = Tensor::empty({static_cast<int64_t>(n)});
        for (size_t i = 0; i < n; ++i) buffer.data()[i] = value_of(world, ctx.rank, i);
        compress_and_all_reduce(*group, buffer, kind);
        size_t wrong = 0, first = n;
        for (size_t i = 0; i < n; ++i) {
          if (buffer.data()[i] != oracle(world, i, kind)) {
            ++wrong;
            first = std::min(first, i);
          }
        }
        EXPECT_EQ(wrong, 0u) << "first at " << first << ": " << buffer.data()[first]
                             << " instead of " << oracle(world, first, kind);
      }
    });
  }
}

TEST(Orthogonalize, OrthonormalColumnsThatSpanTheInputAndZerosForADependentOne) {
  Rng rng(7);
  const int64_t n = 30, r = 4;
  Tensor a = Tensor::empty({n, r});
  for (float& v : a.span()) v = rng.uniform(-1.0f, 1.0f);
  Tensor q = a.clone();
  orthogonalize(q);
  const Tensor gram = matmul(q, q, true, false);
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < r; ++j) {
      EXPECT_NEAR(gram.data()[i * r + j], i == j ? 1.0f : 0.0f, 1e-5f) << i << ", " << j;
    }
  }
  EXPECT_LT(max_abs_diff(matmul(q, matmul(q, a, true, false)), a), 1e-4f);
  // Column 1 of q is column 1 of a minus its projection on column 0, normalised.
  float dot = 0, norm0 = 0;
  for (int64_t k = 0; k < n; ++k) {
    dot += a.data()[k * r] * a.data()[k * r + 1];
    norm0 += a.data()[k * r] * a.data()[k * r];
  }
  std::vector<float> col1(n);
  float norm1 = 0;
  for (int64_t k = 0; k < n; ++k) {
    col1[k] = a.data()[k * r + 1] - dot / norm0 * a.data()[k * r];
    norm1 += col1[k] * col1[k];
  }
  for (int64_t k = 0; k < n; ++k) {
    EXPECT_NEAR(q.data()[k * r + 1], col1[k] / std::sqrt(norm1), 1e-5f) << k;
  }
  // Columns 0, 1 and then their sum: the third becomes zeros, not NaN.
  Tensor d = Tensor::empty({5, 3});
  for (int64_t k = 0; k < 5; ++k) {
    d.data()[k * 3] = static_cast<float>(k + 1);
    d.data()[k * 3 + 1] = static_cast<float>((k * k) % 4);
    d.data()[k * 3 + 2] = d.data()[k * 3] + d.data()[k * 3 + 1];
  }
  orthogonalize(d);
  for (int64_t k = 0; k < 5; ++k) EXPECT_NEAR(d.data()[k * 3 + 2], 0.0f, 1e-3f) << k;
}

// A bucket of a [8, 6] matrix, an [8] bias and a [6, 9] matrix with rank-, step- and
// index-dependent values.
GradBucket make_bucket(int rank, int step) {
  GradBucket b;
  b.is_last = true;
  b.params = {0, 1, 2};
  b.shapes = {{8, 6}, {8}, {6, 9}};
  b.offsets = {0, 48, 56};
  b.buffer = Tensor::empty({110});
  for (int64_t i = 0; i < 110; ++i) {
    b.buffer.data()[i] = std::cos(0.41f * static_cast<float>(i * (step + 2)) + 0.3f * rank) +
                         0.05f * static_cast<float>(rank * (i % 5));
  }
  return b;
}

Tensor plain_mean(int world, int step) {
  Tensor mean = Tensor::zeros({110});
  for (int r = 0; r < world; ++r) add_(mean, make_bucket(r, step).buffer, 1.0f / world);
  return mean;
}

TEST(PowerSgd, AtFullRankTheBucketIsThePlainMean) {
  run_ranks(3, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    SerialExecutor runner("test");
    // Rank 6 = min(n, m) of both matrices; every parameter compressed (rate 0).
    PowerSgd powersgd(*group, runner, {.rank = 6, .start_iter = 0, .min_compression_rate = 0});
    for (int step = 0; step < 2; ++step) {
      GradBucket bucket = make_bucket(ctx.rank, step);
      powersgd.reduce_bucket(bucket);
      EXPECT_LT(max_abs_diff(bucket.buffer, plain_mean(3, step)), 1e-4f) << "step " << step;
    }
    EXPECT_EQ(powersgd.iteration(), 2);
    // Each rank's error is what it meant to send less the mean (as in torch): nothing was
    // lost, so the errors cancel over the ranks.
    Tensor errors = powersgd.error(0).clone();
    ASSERT_EQ(errors.numel(), 110);
    EXPECT_GT(max_abs_diff(errors, Tensor::zeros({110})), 1e-2f);
    group->all_reduce(errors.span(), ReduceOp::SUM);
    EXPECT_LT(max_abs_diff(errors, Tensor::zeros({110})), 1e-4f);
  });
}

// With rank 1 the matrices lose most of themselves, but nothing is lost for good: on every
// rank, the inputs summed over the steps equal what the bucket held after each step plus
// the error left at the end. The bias (not compressed at the default rate) is exact.
TEST(PowerSgd, ErrorFeedbackKeepsWhatWasNotSent) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    SerialExecutor runner("test");
    PowerSgd powersgd(*group, runner, {.rank = 1, .start_iter = 0});
    Tensor inputs = Tensor::zeros({110}), outputs = Tensor::zeros({110});
    float lost = 0;
    for (int step = 0; step < 4; ++step) {
      GradBucket bucket = make_bucket(ctx.rank, step);
      add_(inputs, bucket.buffer);
      powersgd.reduce_bucket(bucket);
      add_(outputs, bucket.buffer);
      const Tensor mean = plain_mean(2, step);
      lost = std::max(lost, max_abs_diff(bucket.buffer, mean));
      for (int64_t i = 48; i < 56; ++i) {
        EXPECT_NEAR(bucket.buffer.data()[i], mean.data()[i], 1e-5f) << "bias " << i - 48;
      }
    }
    EXPECT_GT(lost, 0.05f) << "rank 1 of an [8, 6] matrix should lose something";
    add_(outputs, powersgd.error(0));
    EXPECT_LT(max_abs_diff(outputs, inputs), 1e-4f);
    EXPECT_EQ(powersgd.last_sent_elements(), 8 + (8 + 6) + (6 + 9));
  });
}

// write_low_rank (given) against the three steps it fuses, on a matrix of 300 rows of 257
// (32 vectors of 8 and a scalar remainder per row), and its refusal of a wrong shape.
TEST(PowerSgd, WriteLowRankIsTheApproximationAndWhatItLost) {
  const int64_t n = 300, k = 257, r = 3;
  Tensor m = Tensor::empty({n, k}), p = Tensor::empty({n, r}), q = Tensor::empty({k, r});
  Rng rng(11);
  for (const Tensor& t : {m, p, q}) {
    for (float& v : t.span()) v = rng.uniform(-1.0f, 1.0f);
  }
  const Tensor approx = matmul(p, q, false, true);
  Tensor want_error = m.clone();
  add_(want_error, approx, -1.0f);
  Tensor error = Tensor::full({n, k}, 7.0f);
  const Tensor before = m.clone();
  write_low_rank(m, p, q, error);
  EXPECT_LT(max_abs_diff(m, approx), 1e-6f);
  EXPECT_LT(max_abs_diff(error, want_error), 1e-6f);
#if defined(__x86_64__)
  // Every rank must write the same bits, whatever vector width its CPU has: on x86-64 both
  // paths multiply, then add in order of r, as this loop does (volatile: never fused).
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < k; ++j) {
      float kept = 0;
      for (int64_t c = 0; c < r; ++c) {
        volatile float term = p.data()[i * r + c] * q.data()[j * r + c];
        kept += term;
      }
      ASSERT_EQ(std::bit_cast<uint32_t>(m.data()[i * k + j]), std::bit_cast<uint32_t>(kept))
          << "row " << i << " column " << j;
      ASSERT_EQ(std::bit_cast<uint32_t>(error.data()[i * k + j]),
                std::bit_cast<uint32_t>(before.data()[i * k + j] - kept))
          << "row " << i << " column " << j;
    }
  }
#endif
  EXPECT_THROW(write_low_rank(m, q, q, error), ConfigError);
}

// Before start_iter PowerSGD is the plain all-reduce, and sends every value.
TEST(PowerSgd, BeforeStartIterItIsThePlainAllReduce) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    SerialExecutor runner("test");
    PowerSgd powersgd(*group, runner, {.rank = 1, .start_iter = 2});
    for (int step = 0; step < 2; ++step) {
      GradBucket bucket = make_bucket(ctx.rank, step);
      powersgd.reduce_bucket(bucket);
      EXPECT_LT(max_abs_diff(bucket.buffer, plain_mean(2, step)), 1e-6f);
      EXPECT_EQ(powersgd.last_sent_elements(), 110);
    }
    EXPECT_EQ(powersgd.error(0).numel(), 0);  // no compressed step yet
    GradBucket bucket = make_bucket(ctx.rank, 2);
    powersgd.reduce_bucket(bucket);
    EXPECT_GT(max_abs_diff(bucket.buffer, plain_mean(2, 2)), 1e-3f);
    EXPECT_EQ(powersgd.last_sent_elements(), 8 + 14 + 15);
  });
}

// The hooks inside lesson 10's DDP, on every backend: a few SGD steps of an MLP whose
// buckets (a small cap: several per step) are compressed on the hook thread while backward
// runs. Every rank ends with identical parameters; fp16 and PowerSGD at full rank stay
// close to the plain mean's run, and PowerSGD at rank 1 trains (the loss goes down).
TEST(CommHooks, InsideDdpTheRanksStayIdenticalAndCloseToTheExactRun) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(2, [&](RankContext& ctx) {
      auto group = make_group(backend, ctx);
      const std::vector<int64_t> sizes{12, 24, 16, 5};
      const auto train = [&](const HookOptions& hook, std::vector<float>* losses) {
        Rng rng(5 + static_cast<uint64_t>(ctx.rank));
        auto model = make_mlp(sizes, rng);
        HookedDdp sync(*model, *group, hook, {.first_bucket_bytes = 512, .bucket_cap_bytes = 1024});
        Sgd opt(model->parameters(), SgdOptions{.lr = 0.1f});
        for (int step = 0; step < 6; ++step) {
          Tensor x = Tensor::empty({8, 12});
          Tensor y = Tensor::empty({8});
          for (int64_t i = 0; i < 8; ++i) {
            y.data()[i] = static_cast<float>((i + ctx.rank) % 5);
            for (int64_t j = 0; j < 12; ++j) {
              x.data()[i * 12 + j] = std::sin(0.2f * static_cast<float>((i + 1) * (j + 1)) +
                                              static_cast<float>(ctx.rank));
            }
          }
          const StepResult result = ddp_train_step(*model, opt, sync, {x, y});
          if (losses) losses->push_back(result.loss);
        }
        EXPECT_EQ(check_identical_across_ranks(*model, *group), "") << hook.hook;
        std::vector<float> flat;
        for (const Variable& p : model->parameters()) {
          for (float v : p.data().span()) flat.push_back(v);
        }
        return flat;
      };
      const std::vector<float> exact = train({.hook = "none"}, nullptr);
      const auto close = [&](const std::vector<float>& got, float tolerance, const char* what) {
        float worst = 0;
        for (size_t i = 0; i < got.size(); ++i)
          worst = std::max(worst, std::fabs(got[i] - exact[i]));
        EXPECT_LT(worst, tolerance) << what;
      };
      close(train({.hook = "allreduce"}, nullptr), 1e-6f, "allreduce hook");
      close(train({.hook = "fp16"}, nullptr), 2e-3f, "fp16");
      close(train({.hook = "bf16"}, nullptr), 2e-2f, "bf16");
      close(
          train(
              {.hook = "powersgd", .powersgd_rank = 24, .start_iter = 0, .min_compression_rate = 0},
              nullptr),
          1e-4f, "PowerSGD at full rank");
      std::vector<float> losses;
      train({.hook = "powersgd", .powersgd_rank = 1, .start_iter = 2}, &losses);
      EXPECT_LT(losses.back(), losses.front()) << "PowerSGD rank 1 should still train";
    });
  }
}

// A 16 MiB bucket through the fp16 hook and the Reducer, under a short timeout: the half
// all-reduce's four chunks of messages, posted ahead, must not deadlock. Among the values,
// every 1024th near fp16's limit on both ranks (the sum overflows unless divided first) and
// every 1024th a subnormal mean (one rounding, not two).
TEST(CommHooks, ASixteenMiBBucketThroughTheFp16Hook) {
  run_ranks(2,
            [](RankContext& ctx) {
              auto group = make_group("tcp", ctx);
              const int64_t n = 4 << 20;  // 16 MiB of floats
              const auto input = [&](int rank, int64_t i) {
                if (i % 1024 == 1) return value_of(2, rank, 1);  // near the limit
                if (i % 1024 == 2) return value_of(2, rank, 2);  // a subnormal mean
                return static_cast<float>(i % 64 + 64 * rank);
              };
              Variable big(Tensor::zeros({n}), true);
              Tensor x = Tensor::empty({n});
              for (int64_t i = 0; i < n; ++i) x.data()[i] = input(ctx.rank, i);
              SerialExecutor runner("test");
              Reducer reducer({{"big", big.set_name("big")}}, *group);
              reducer.register_comm_hook(compress_hook(*group, HalfKind::fp16, runner));
              reducer.prepare_for_backward({});
              sum(big * Variable(x)).backward();
              const std::vector<float> g = big.grad().to_vector();
              const float limit = oracle(2, 1, HalfKind::fp16);
              const float subnormal = oracle(2, 2, HalfKind::fp16);
              int64_t wrong = 0;
              for (int64_t i = 0; i < n; ++i) {
                const float want = i % 1024 == 1   ? limit
                                   : i % 1024 == 2 ? subnormal
                                                   : static_cast<float>(i % 64) + 32.0f;
                wrong += g[i] != want;
              }
              EXPECT_EQ(wrong, 0) << "near the limit: " << g[1] << " (want " << limit
                                  << "), a subnormal mean: " << g[2] << " (want " << subnormal
                                  << ")";
            },
            {.timeout = std::chrono::seconds(30)});
}

}  // namespace
}  // namespace course::test
