// sync_batch_norm_test.cpp: lesson 11, SyncBatchNorm on N ranks equals BatchNorm1d on the
// union of their rows (forward, backward, running statistics), for even, uneven and empty
// per-rank batches; convert_sync_batchnorm; DDP + SyncBatchNorm training equals one process.
//
//   ./build/solutions/test_11 --gtest_filter='SyncBatchNorm*'
#include "sync_batch_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "../collectives/group_factory.h"
#include "bn_mlp.h"
#include "distributed_data_parallel.h"
#include "linear.h"
#include "ops.h"
#include "optimizer.h"

namespace course::test {
namespace {

constexpr int64_t kChannels = 5;

// Row i, channel c of the global batch: channel-dependent offset and scale, so every
// channel has its own mean and variance, and rows are not symmetric.
Tensor global_input(int64_t rows, int64_t seed) {
  std::vector<float> v(static_cast<size_t>(rows * kChannels));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t c = 0; c < kChannels; ++c) {
      v[static_cast<size_t>(i * kChannels + c)] =
          static_cast<float>(0.5 * c - 1 + (1 + 0.3 * c) * std::sin(0.7 * i + 1.3 * c + seed));
    }
  }
  return Tensor::from_vector({rows, kChannels}, v);
}

// The upstream gradient: dL/dy for L = sum(y * G).
Tensor global_grad(int64_t rows) {
  std::vector<float> v(static_cast<size_t>(rows * kChannels));
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<float>(std::cos(0.37 * k) + 0.1 * (k % 3));
  return Tensor::from_vector({rows, kChannels}, v);
}

void set_affine(BatchNorm1d& bn) {
  std::vector<float> w(kChannels), b(kChannels);
  for (int64_t c = 0; c < kChannels; ++c) {
    w[static_cast<size_t>(c)] = 0.5f + 0.25f * static_cast<float>(c);
    b[static_cast<size_t>(c)] = -0.2f * static_cast<float>(c) + 0.1f;
  }
  bn.weight().set_data(Tensor::from_vector({kChannels}, w));
  bn.bias().set_data(Tensor::from_vector({kChannels}, b));
}

void expect_close(const Tensor& got, const Tensor& want, float tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  for (size_t k = 0; k < g.size(); ++k) {
    ASSERT_NEAR(g[k], w[k], tol * (1 + std::fabs(w[k]))) << what << " element " << k;
  }
}

struct Layout {
  const char* name;
  std::vector<int64_t> rows;  // per rank
};

// Runs two training steps of SyncBatchNorm on each rank's rows and of BatchNorm1d on all
// rows, and compares outputs, input gradients, parameter gradients (summed over ranks) and
// running statistics.
void check_layout(const Layout& layout) {
  const int world = static_cast<int>(layout.rows.size());
  run_ranks(world, [&](RankContext& ctx) {
    auto group = make_group("tcp", ctx, "bn");
    const int64_t total = std::accumulate(layout.rows.begin(), layout.rows.end(), int64_t{0});
    const int64_t begin =
        std::accumulate(layout.rows.begin(), layout.rows.begin() + ctx.rank, int64_t{0});
    const int64_t mine = layout.rows[static_cast<size_t>(ctx.rank)];
    SyncBatchNorm sync(kChannels, *group);
    BatchNorm1d oracle(kChannels);
    set_affine(sync);
    set_affine(oracle);
    for (int64_t step = 0; step < 2; ++step) {
      const Tensor x_all = global_input(total, step), g_all = global_grad(total);
      Variable x_mine(x_all.rows(begin, mine).clone(), true), x_full(x_all, true);
      sync.zero_grad();
      oracle.zero_grad();
      Variable y_mine = sync.forward(x_mine);
      Variable y_full = oracle.forward(x_full);
      expect_close(y_mine.data(), y_full.data().rows(begin, mine).clone(), 1e-5f, "forward y");
      sum(y_mine * Variable(g_all.rows(begin, mine).clone())).backward();
      sum(y_full * Variable(g_all)).backward();
      expect_close(x_mine.grad(), x_full.grad().rows(begin, mine).clone(), 1e-4f, "dx");
      // Each rank holds its rows' share of dweight and dbias: their sum is the oracle's.
      for (const auto& [name, p] : sync.named_parameters()) {
        std::vector<float> g = p.grad().to_vector();
        group->all_reduce(g, ReduceOp::SUM);
        const Variable& want = name == "weight" ? oracle.weight() : oracle.bias();
        expect_close(Tensor::from_vector({kChannels}, g), want.grad(), 1e-4f, "d" + name);
      }
      const NamedTensors got = sync.named_buffers(), want = oracle.named_buffers();
      for (size_t k = 0; k < got.size(); ++k) {
        expect_close(got[k].second, want[k].second, 1e-5f, got[k].first);
      }
    }
  });
}

TEST(SyncBatchNormTest, EqualsBatchNormOnOneRank) {
  check_layout({"one rank", {7}});
}
TEST(SyncBatchNormTest, EqualsBatchNormTwoRanksEven) {
  check_layout({"even", {4, 4}});
}
TEST(SyncBatchNormTest, EqualsBatchNormThreeRanksUneven) {
  check_layout({"uneven", {2, 5, 3}});
}
TEST(SyncBatchNormTest, EqualsBatchNormFourRanksOneEmpty) {
  check_layout({"one empty", {3, 0, 4, 1}});
}

// The merge alone, against statistics computed directly over all rows.
TEST(SyncBatchNormTest, GatherStatsMergesCountsMeansAndVariances) {
  const std::vector<int64_t> rows{3, 0, 6, 2};
  const int64_t total = 11;
  const Tensor all = global_input(total, 4);
  std::vector<float> gathered;
  int64_t begin = 0;
  for (int64_t n : rows) {
    const BatchNormStats s = batch_norm_stats(all.rows(begin, n).clone(), 1e-5f);
    gathered.insert(gathered.end(), s.mean.begin(), s.mean.end());
    gathered.insert(gathered.end(), s.invstd.begin(), s.invstd.end());
    gathered.push_back(static_cast<float>(n));
    begin += n;
  }
  const BatchNormStats merged = sync_batch_norm_gather_stats(gathered, kChannels, 1e-5f);
  const BatchNormStats direct = batch_norm_stats(all, 1e-5f);
  EXPECT_EQ(merged.count, total);
  for (size_t c = 0; c < kChannels; ++c) {
    EXPECT_NEAR(merged.mean[c], direct.mean[c], 1e-5f) << "channel " << c;
    EXPECT_NEAR(merged.invstd[c], direct.invstd[c], 1e-4f * direct.invstd[c]) << "channel " << c;
  }
  EXPECT_THROW(sync_batch_norm_gather_stats({1, 2, 3}, kChannels, 1e-5f), ConfigError);
}

TEST(SyncBatchNormTest, TooFewRowsOverAllRanksIsAnErrorOnEveryRank) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx, "bn");
    SyncBatchNorm sync(kChannels, *group);
    const int64_t rows = ctx.rank == 0 ? 1 : 0;
    EXPECT_THROW(sync.forward(Variable(global_input(3, 0).rows(0, rows).clone())), ConfigError);
  });
}

TEST(ConvertSyncBatchNormTest, SwapsEveryBatchNormKeepingNamesAndValues) {
  run_ranks(1, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx, "bn");
    Rng rng(3);
    auto model = make_bn_mlp({6, 8, 7, 3}, rng);
    // Running statistics that are not the defaults, so copying them is visible.
    model->forward(Variable(Tensor::from_vector(
        {4, 6}, {1, 2, 3, 4, 5, 6, 0, 1, 0, 1, 0, 1, -1, 2, -3, 4, -5, 6, 2, 2, 1, 1, 0, 0})));
    model->set_training(false);
    const NamedTensors before = model->state_dict();
    auto converted = convert_sync_batchnorm(*model, *group);
    int sync_layers = 0;
    for (const auto& layer : converted->layers()) {
      if (auto* s = dynamic_cast<SyncBatchNorm*>(layer.get())) {
        ++sync_layers;
        EXPECT_FALSE(s->training());
        EXPECT_EQ(&s->group(), group.get());
      }
    }
    EXPECT_EQ(sync_layers, 2);
    const NamedTensors after = converted->state_dict();
    ASSERT_EQ(before.size(), after.size());
    for (size_t k = 0; k < before.size(); ++k) {
      EXPECT_EQ(before[k].first, after[k].first);
      EXPECT_EQ(before[k].second.to_vector(), after[k].second.to_vector()) << before[k].first;
    }
  });
}

// DDP (lesson 10) with SyncBatchNorm for a few SGD steps equals one process with
// BatchNorm1d on the global batch; per-rank BatchNorm does not.
float ddp_versus_one_process(RankContext& ctx, bool sync_bn) {
  constexpr int64_t kPerRank = 6, kIn = 7, kClasses = 4;
  auto pg = make_group("tcp", ctx, "ddp");
  auto bn_group = make_group("tcp", ctx, "syncbn");
  Rng rng(50 + static_cast<uint64_t>(ctx.rank)), oracle_rng(50);
  std::shared_ptr<LayerStack> model = make_bn_mlp({kIn, 10, 8, kClasses}, rng);
  if (sync_bn) model = convert_sync_batchnorm(*model, *bn_group);
  auto oracle = make_bn_mlp({kIn, 10, 8, kClasses}, oracle_rng);
  DistributedDataParallel ddp(*model, *pg, {.first_bucket_bytes = 256, .bucket_cap_bytes = 512});
  Sgd opt(model->parameters(), {.lr = 0.1f, .momentum = 0.9f});
  Sgd oracle_opt(oracle->parameters(), {.lr = 0.1f, .momentum = 0.9f});
  const int64_t rows = kPerRank * ctx.world;
  for (int step = 0; step < 3; ++step) {
    std::vector<float> x(static_cast<size_t>(rows * kIn)), y(static_cast<size_t>(rows));
    for (size_t k = 0; k < x.size(); ++k)
      x[k] = static_cast<float>(std::sin(0.3 * k + step) * (1 + k % 4));
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 7 + step) % kClasses);
    const Tensor xs = Tensor::from_vector({rows, kIn}, x), ys = Tensor::from_vector({rows}, y);
    opt.zero_grad();
    cross_entropy(ddp.forward(Variable(xs.rows(ctx.rank * kPerRank, kPerRank).clone())),
                  ys.rows(ctx.rank * kPerRank, kPerRank).clone())
        .backward();
    opt.step();
    oracle_opt.zero_grad();
    cross_entropy(oracle->forward(Variable(xs)), ys).backward();
    oracle_opt.step();
  }
  float worst = 0;
  const NamedTensors a = model->state_dict(), b = oracle->state_dict();
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].first.find("num_batches") != std::string::npos) continue;
    const std::vector<float> u = a[k].second.to_vector(), v = b[k].second.to_vector();
    for (size_t i = 0; i < u.size(); ++i) worst = std::max(worst, std::fabs(u[i] - v[i]));
  }
  return worst;
}

TEST(SyncBatchNormTest, DdpWithSyncBatchNormEqualsOneProcessOnTheGlobalBatch) {
  for (int world : {2, 3}) {
    run_ranks(world, [](RankContext& ctx) {
      EXPECT_LT(ddp_versus_one_process(ctx, /*sync_bn=*/true), 1e-4f) << "rank " << ctx.rank;
    });
  }
}

TEST(SyncBatchNormTest, PerRankBatchNormDriftsFromOneProcess) {
  run_ranks(2, [](RankContext& ctx) {
    EXPECT_GT(ddp_versus_one_process(ctx, /*sync_bn=*/false), 1e-3f) << "rank " << ctx.rank;
  });
}

}  // namespace
}  // namespace course::test
