// exact_hooks_test.cpp: lesson 14, where the hooks must be exact: PowerSGD at full rank on
// rank-deficient gradients (the first layer of a small batch), step by step and over 20
// training steps, and the fp16 hook's order (divide in float32, then cast) at three ranks
// and near fp16's largest value, where dividing after the sum or casting first differ.
//
//   ./build/solutions/test_14 --gtest_filter='Exact*'
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../collectives/group_factory.h"
#include "comm_hooks.h"
#include "ddp_training.h"
#include "harness.h"
#include "hooked_ddp.h"
#include "ops.h"
#include "optimizer.h"
#include "rng.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course::test {
namespace {

// An n x m matrix of rank k: the product of thin random n x k and k x m matrices, the
// j-th of the k directions scaled by spread^j (a gradient's singular values fall fast).
Tensor low_rank(int64_t n, int64_t m, int64_t k, uint64_t seed, float spread = 1.0f) {
  Rng rng(seed);
  Tensor a = Tensor::empty({n, k}), b = Tensor::empty({k, m});
  for (float& v : a.span()) v = rng.uniform(-1.0f, 1.0f);
  for (float& v : b.span()) v = rng.uniform(-1.0f, 1.0f);
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t i = 0; i < n; ++i) a.data()[i * k + j] *= std::pow(spread, static_cast<float>(j));
  }
  return matmul(a, b);
}

// P = M Q for a random Q with as many columns as M has (full rank), M of rank 3 with
// singular values about 1, 3e-3 and 1e-5: five of P's eight columns lie in the span of
// the others up to float32's rounding, and the third nearly so. The
// orthogonalised columns must still be orthonormal (or zero), and span M's columns.
TEST(ExactOrthogonalize, ARankDeficientPGivesOrthonormalColumnsThatSpanIt) {
  for (uint64_t seed : {1u, 2u, 3u, 4u}) {
    SCOPED_TRACE(seed);
    const int64_t n = 48, r = 8;
    const Tensor m = low_rank(n, r, 3, seed, 3e-3f);
    Rng rng(seed + 100);
    Tensor q = Tensor::empty({r, r});
    for (float& v : q.span()) v = rng.uniform(-1.0f, 1.0f);
    Tensor p = matmul(m, q);
    orthogonalize(p);
    const Tensor gram = matmul(p, p, true, false);
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < r; ++j) {
        const float g = gram.data()[i * r + j];
        if (i == j) {
          EXPECT_TRUE(std::fabs(g - 1.0f) < 1e-5f || std::fabs(g) < 1e-6f)
              << "column " << i << " has squared norm " << g << ": neither unit nor zero";
        } else {
          EXPECT_NEAR(g, 0.0f, 1e-5f) << "columns " << i << " and " << j;
        }
      }
    }
    // P Pᵀ M = M: the columns span M's.
    EXPECT_LT(max_abs_diff(matmul(p, matmul(p, m, true, false)), m), 1e-5f);
  }
}

// One PowerSGD step at full rank on a bucket whose matrix has rank 2 (and a bias): the
// plain mean, element by element, to float32's rounding.
TEST(ExactPowerSgd, AtFullRankARankDeficientMatrixIsThePlainMean) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    SerialExecutor runner("test");
    const int64_t n = 40, m = 24;
    PowerSgd powersgd(*group, runner, {.rank = 24, .start_iter = 0, .min_compression_rate = 0});
    const auto bucket_of = [&](int rank, int step) {
      GradBucket b;
      b.is_last = true;
      b.params = {0, 1};
      b.shapes = {{n, m}, {n}};
      b.offsets = {0, n * m};
      b.buffer = Tensor::empty({n * m + n});
      copy_(b.buffer.rows(0, n * m).reshape({n, m}),
            low_rank(n, m, 2, 10 + static_cast<uint64_t>(rank + 7 * step)));
      for (int64_t i = 0; i < n; ++i) b.buffer.data()[n * m + i] = 0.01f * (i + rank);
      return b;
    };
    for (int step = 0; step < 3; ++step) {
      GradBucket bucket = bucket_of(ctx.rank, step);
      Tensor mean = Tensor::zeros({n * m + n});
      for (int r = 0; r < 2; ++r) add_(mean, bucket_of(r, step).buffer, 0.5f);
      powersgd.reduce_bucket(bucket);
      EXPECT_LT(max_abs_diff(bucket.buffer, mean), 2e-6f) << "step " << step;
    }
  });
}

// torch's powerSGD_hook at full rank, compressing from step 2 on, ends 20 steps within
// 1e-7 of plain DDP. Here: an MLP whose first layer (16 x 48) gets gradients of rank at
// most 8 (2 ranks x 4 examples), SGD, 20 steps, against the same run without a hook.
TEST(ExactPowerSgd, AtFullRankTwentyTrainingStepsEndAtThePlainMeansParameters) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    const std::vector<int64_t> sizes{48, 16, 12, 4};
    const auto train = [&](const HookOptions& hook) {
      Rng rng(9);
      auto model = make_mlp(sizes, rng);
      HookedDdp sync(*model, *group, hook);
      Sgd opt(model->parameters(), SgdOptions{.lr = 0.2f});
      for (int step = 0; step < 20; ++step) {
        Tensor x = Tensor::empty({4, 48});
        Tensor y = Tensor::empty({4});
        for (int64_t i = 0; i < 4; ++i) {
          y.data()[i] = static_cast<float>((i + ctx.rank + step) % 4);
          for (int64_t j = 0; j < 48; ++j) {
            x.data()[i * 48 + j] =
                std::sin(0.3f * static_cast<float>((i + 1) * (j + 1) + 5 * step + 11 * ctx.rank));
          }
        }
        ddp_train_step(*model, opt, sync, {x, y});
      }
      return model->state_dict();
    };
    const NamedTensors plain = train({.hook = "none"});
    const NamedTensors compressed = train(
        {.hook = "powersgd", .powersgd_rank = 48, .start_iter = 2, .min_compression_rate = 0});
    EXPECT_LE(max_abs_difference(plain, compressed), 1e-6);
  });
}

}  // namespace
}  // namespace course::test
