// reducer_test.cpp: lesson 10, the Reducer on real process groups (forked ranks):
// equivalence with one process on the global batch, launch order under out-of-order
// gradients, rebuilt buckets, and a bucket of tens of MiB.
//
//   ./build/solutions/test_10 --gtest_filter='Reducer*'
#include "reducer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "ddp_fixtures.h"
#include "distributed_data_parallel.h"
#include "error.h"
#include "naive_ddp.h"

namespace course::test {
namespace {

constexpr int64_t kFeatures = 12, kClasses = 5, kPerRank = 6;
const std::vector<int64_t> kSizes{kFeatures, 24, 16, kClasses};

struct BucketConfig {
  const char* name;
  int64_t first_bytes, cap_bytes;
};
// Per parameter; a few buckets with overshoot (weights 1152 and 1536 bytes); one bucket.
const BucketConfig kConfigs[] = {
    {"per-parameter", 0, 0},
    {"small", 256, 1024},
    {"one bucket", std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()},
    {"default", int64_t{1} << 20, int64_t{25} << 20}};

// Trains `steps` steps with DDP (per-rank batch kPerRank, replicas initialised with
// different seeds, so rank 0's broadcast matters) beside one process on the global batch,
// and returns the largest parameter difference.
float ddp_versus_one_process(ProcessGroup& group, const BucketConfig& config, OptimizerKind kind,
                             bool as_view, int steps) {
  const int world = group.size(), rank = group.rank();
  Rng mine_rng(100 + static_cast<uint64_t>(rank)), oracle_rng(100);
  auto model = make_mlp(kSizes, mine_rng);
  auto oracle = make_mlp(kSizes, oracle_rng);
  DistributedDataParallel ddp(*model, group,
                              {.first_bucket_bytes = config.first_bytes,
                               .bucket_cap_bytes = config.cap_bytes,
                               .gradient_as_bucket_view = as_view});
  auto opt = make_optimizer(kind, model->parameters());
  auto oracle_opt = make_optimizer(kind, oracle->parameters());
  for (int step = 0; step < steps; ++step) {
    const auto global = make_batch(world * kPerRank, kFeatures, kClasses, step);
    const auto local = slice_batch(global, rank * kPerRank, kPerRank);
    opt->zero_grad();
    cross_entropy(ddp.forward(Variable(local.first)), local.second).backward();
    EXPECT_FALSE(ddp.reducer().reduction_pending());
    opt->step();
    oracle_opt->zero_grad();
    cross_entropy(oracle->forward(Variable(global.first)), global.second).backward();
    oracle_opt->step();
  }
  return max_parameter_diff(*model, *oracle);
}

class ReducerEquivalence : public testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ReducerEquivalence, MatchesOneProcessOnTheGlobalBatch) {
  const auto [backend, world] = GetParam();
  run_ranks(world, [backend = backend](RankContext& ctx) {
    auto group = make_group(backend, ctx);
    for (const BucketConfig& config : kConfigs) {
      for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
        SCOPED_TRACE(std::string(config.name) + (kind == OptimizerKind::sgd ? ", sgd" : ", adam"));
        EXPECT_LT(ddp_versus_one_process(*group, config, kind, false, 3), 2e-5f);
      }
    }
    SCOPED_TRACE("gradient_as_bucket_view");
    EXPECT_LT(ddp_versus_one_process(*group, kConfigs[1], OptimizerKind::sgd, true, 3), 2e-5f);
  });
}

std::vector<std::tuple<std::string, int>> equivalence_params() {
  std::vector<std::tuple<std::string, int>> params;
  for (const std::string& backend : available_backends()) {
    for (int world = 1; world <= 4; ++world) params.emplace_back(backend, world);
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(Backends, ReducerEquivalence, testing::ValuesIn(equivalence_params()),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_np" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Lesson 09's NaiveDdp (every gradient after backward, one flat all-reduce) and lesson
// 10's Reducer train the same replicas on the same batches to the same parameters.
TEST(ReducerEquivalence, MatchesLessonNinesNaiveDdp) {
  run_ranks(3, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Rng naive_rng(200 + static_cast<uint64_t>(ctx.rank)), bucketed_rng(300);
    auto naive_model = make_mlp(kSizes, naive_rng);
    auto bucketed_model = make_mlp(kSizes, bucketed_rng);
    NaiveDdp naive(*naive_model, *group, GradSync::flat);
    bucketed_model->load_state_dict(naive_model->state_dict());  // rank 0's, broadcast
    DistributedDataParallel bucketed(*bucketed_model, *group,
                                     {.first_bucket_bytes = 256, .bucket_cap_bytes = 1024});
    auto naive_opt = make_optimizer(OptimizerKind::sgd, naive_model->parameters());
    auto bucketed_opt = make_optimizer(OptimizerKind::sgd, bucketed_model->parameters());
    for (int step = 0; step < 3; ++step) {
      const auto local = slice_batch(make_batch(3 * kPerRank, kFeatures, kClasses, step),
                                     ctx.rank * kPerRank, kPerRank);
      naive_opt->zero_grad();
      cross_entropy(naive.forward(Variable(local.first)), local.second).backward();
      naive.sync_gradients();
      naive_opt->step();
      bucketed_opt->zero_grad();
      cross_entropy(bucketed.forward(Variable(local.first)), local.second).backward();
      bucketed_opt->step();
    }
    EXPECT_LT(max_parameter_diff(*naive_model, *bucketed_model), 1e-6f);
  });
}

// Four loose parameters whose forward order depends on the rank, so backward makes their
// gradients ready in a rank-dependent order (the engine runs the latest-created node
// first: the parameter used last gets its gradient first).
struct Loose {
  std::vector<std::pair<std::string, Variable>> params;
  std::vector<Tensor> inputs;  // x_k: the gradient of parameter k on this rank
};

Loose make_loose(int rank) {
  Loose l;
  const int64_t sizes[] = {3, 5, 2, 4};
  for (int k = 0; k < 4; ++k) {
    Tensor w = Tensor::empty({sizes[k]});
    Tensor x = Tensor::empty({sizes[k]});
    for (int64_t i = 0; i < sizes[k]; ++i) {
      w.data()[i] = 0.1f * static_cast<float>(i + k);
      x.data()[i] = static_cast<float>(rank + 1) * 0.5f + static_cast<float>(i * 3 + k);
    }
    const std::string name = "w" + std::to_string(k);
    l.params.emplace_back(name, Variable(w, true).set_name(name));
    l.inputs.push_back(x);
  }
  return l;
}

// sum_k sum(w_k * x_k), using the parameters in `order`.
Variable loose_loss(const Loose& l, const std::vector<int>& order) {
  Variable loss;
  for (int k : order) {
    Variable term = sum(l.params[k].second * Variable(l.inputs[k]));
    loss = loss.defined() ? loss + term : term;
  }
  return loss;
}

// The mean over ranks of x_k, in closed form.
float expected_mean(int world, int k, int64_t i) {
  float total = 0;
  for (int r = 0; r < world; ++r)
    total += static_cast<float>(r + 1) * 0.5f + static_cast<float>(i * 3 + k);
  return total / static_cast<float>(world);
}

void expect_mean_gradients(const Loose& l, int world) {
  for (int k = 0; k < 4; ++k) {
    const std::vector<float> g = l.params[k].second.grad().to_vector();
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_NEAR(g[i], expected_mean(world, k, static_cast<int64_t>(i)), 1e-5f)
          << l.params[k].first << "[" << i << "]";
    }
  }
}

// A rank that launches buckets in another order than its peers mixes up data (tcp throws
// ProtocolError on mismatched sizes) or deadlocks (gloo): fail in seconds, not minutes.
const RanksOptions kShort{.timeout = std::chrono::seconds(15)};

const std::vector<int> kForwardOrders[] = {{3, 2, 1, 0}, {0, 2, 3, 1}, {1, 3, 0, 2}};

TEST(ReducerLaunchOrder, BucketsLaunchInOrderWhateverOrderGradientsArriveIn) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(
        3,
        [&](RankContext& ctx) {
          auto group = make_group(backend, ctx);
          Loose l = make_loose(ctx.rank);
          // Per-parameter buckets in reverse registration order: bucket b holds w_(3-b).
          Reducer reducer(l.params, *group, {.first_bucket_bytes = 0, .bucket_cap_bytes = 0});
          reducer.prepare_for_backward({});
          loose_loss(l, kForwardOrders[ctx.rank]).backward();
          EXPECT_FALSE(reducer.reduction_pending());
          EXPECT_EQ(reducer.launch_log(), (std::vector<size_t>{0, 1, 2, 3}));
          // Rank 0 used w3 first, so its gradients came w0, w1, w2, w3: buckets 3, 2, 1, 0.
          if (ctx.rank == 0) {
            EXPECT_EQ(reducer.ready_log(), (std::vector<size_t>{3, 2, 1, 0}));
          }
          // Every rank logged the same launches (all-gathered, compared element by element).
          std::vector<float> log(reducer.launch_log().begin(), reducer.launch_log().end());
          std::vector<float> all(log.size() * 3);
          group->all_gather(log, all);
          for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], log[i % log.size()]);
          expect_mean_gradients(l, 3);
        },
        kShort);
  }
}

TEST(ReducerRebuild, EveryRankAdoptsRankZerosReadyOrder) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(
        3,
        [&](RankContext& ctx) {
          auto group = make_group(backend, ctx);
          Loose l = make_loose(ctx.rank);
          // 16-byte limit: w1 (20 bytes) alone, w0 + w2 or w2 + w3 together, depending on order.
          Reducer reducer(l.params, *group, {.first_bucket_bytes = 16, .bucket_cap_bytes = 16});
          EXPECT_FALSE(reducer.rebuild_buckets());  // nothing to rebuild from yet
          reducer.prepare_for_backward({});
          loose_loss(l, kForwardOrders[ctx.rank]).backward();
          ASSERT_TRUE(reducer.rebuild_buckets());
          EXPECT_FALSE(reducer.rebuild_buckets());  // once only
          // Rank 0's ready order is w0, w1, w2, w3 (bytes 12, 20, 8, 16), limit 16.
          const std::vector<BucketInfo> buckets = reducer.buckets();
          std::vector<BucketIndices> layout;
          for (const BucketInfo& b : buckets) layout.push_back(b.params);
          EXPECT_EQ(layout, (std::vector<BucketIndices>{{0, 1}, {2, 3}}));
          // And the second iteration still averages correctly with the new buckets.
          for (auto& entry : l.params) entry.second.zero_grad();
          reducer.prepare_for_backward({});
          loose_loss(l, kForwardOrders[ctx.rank]).backward();
          EXPECT_EQ(reducer.launch_log(), (std::vector<size_t>{0, 1}));
          expect_mean_gradients(l, 3);
        },
        kShort);
  }
}

// A bucket of 40 MiB (larger than any socket buffer): a ring that sends before it
// receives deadlocks here, and the short timeout turns that into a failure in seconds.
TEST(ReducerLargeBucket, FortyMiBBucketAveragesExactly) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(2,
              [&](RankContext& ctx) {
                auto group = make_group(backend, ctx);
                const int64_t n = 10 << 20;  // 40 MiB of floats
                Tensor x = Tensor::empty({n});
                for (int64_t i = 0; i < n; ++i) {
                  x.data()[i] = static_cast<float>((i % 1000) + 1000 * ctx.rank);
                }
                Variable big(Tensor::zeros({n}), true);
                Variable small(Tensor::from_vector({2}, {1.0f, 2.0f}), true);
                Reducer reducer({{"small", small.set_name("small")}, {"big", big.set_name("big")}},
                                *group, {.timeout = std::chrono::seconds(20)});
                // Reverse order: big first, past the 1 MiB first limit at once; then small.
                ASSERT_EQ(reducer.buckets().size(), 2u);
                EXPECT_EQ(reducer.buckets()[0].bytes, n * 4);
                reducer.prepare_for_backward({});
                (sum(big * Variable(x)) + sum(small * small)).backward();
                const std::vector<float> g = big.grad().to_vector();
                int64_t wrong = 0;
                for (int64_t i = 0; i < n; ++i) {
                  wrong += g[i] != static_cast<float>(i % 1000) + 500.0f;
                }
                EXPECT_EQ(wrong, 0);
                EXPECT_EQ(small.grad().to_vector(), (std::vector<float>{2.0f, 4.0f}));
              },
              {.timeout = std::chrono::seconds(40)});
  }
}

// A communication hook (torch's register_comm_hook) gets every bucket in launch order,
// holding the local gradients NOT divided (grad_scale() is 1), with its parameters'
// offsets and shapes; dividing and all-reducing it, as torch's allreduce_hook does, gives
// bit for bit the gradients of a reducer without a hook.
TEST(ReducerCommHook, BucketsArriveUndividedInOrderAndTheHooksMeanIsTheGradient) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(
        3,
        [&](RankContext& ctx) {
          auto group = make_group(backend, ctx);
          Loose hooked = make_loose(ctx.rank), plain = make_loose(ctx.rank);
          // Limit 16 bytes: w3 (16 bytes) alone, w2 + w1 (8 + 20), w0 (12): 3 buckets.
          const ReducerOptions limits{.first_bucket_bytes = 16, .bucket_cap_bytes = 16};
          Reducer reducer(hooked.params, *group, limits);
          Reducer reference(plain.params, *group, limits);
          const std::vector<BucketInfo> layout = reducer.buckets();
          std::vector<GradBucket> seen;
          reducer.register_comm_hook([&](GradBucket& bucket) {
            seen.push_back(bucket);
            seen.back().buffer = bucket.buffer.clone();  // as it arrived
            scale_(bucket.buffer, 1.0f / static_cast<float>(group->size()));
            return group->all_reduce_async(bucket.buffer.span(), ReduceOp::SUM);
          });
          EXPECT_EQ(reducer.grad_scale(), 1.0f);
          EXPECT_EQ(reference.grad_scale(), 1.0f / 3.0f);
          for (Reducer* r : {&reducer, &reference}) r->prepare_for_backward({});
          loose_loss(hooked, kForwardOrders[ctx.rank]).backward();
          loose_loss(plain, kForwardOrders[ctx.rank]).backward();
          ASSERT_EQ(seen.size(), layout.size());
          for (size_t b = 0; b < seen.size(); ++b) {
            const GradBucket& bucket = seen[b];
            EXPECT_EQ(bucket.index, b);
            EXPECT_EQ(bucket.is_last, b + 1 == seen.size());
            EXPECT_EQ(bucket.params, layout[b].params);
            ASSERT_EQ(bucket.offsets.size(), bucket.params.size());
            ASSERT_EQ(bucket.shapes.size(), bucket.params.size());
            for (size_t j = 0; j < bucket.params.size(); ++j) {
              const size_t k = bucket.params[j];
              EXPECT_EQ(bucket.shapes[j], hooked.inputs[k].shape());
              const std::vector<float> local =
                  bucket.buffer.rows(bucket.offsets[j], hooked.inputs[k].numel()).to_vector();
              EXPECT_EQ(local, hooked.inputs[k].to_vector()) << "w" << k << ": not divided";
            }
          }
          expect_mean_gradients(hooked, 3);
          for (int k = 0; k < 4; ++k) {
            EXPECT_EQ(hooked.params[k].second.grad().to_vector(),
                      plain.params[k].second.grad().to_vector())
                << "w" << k;
          }
        },
        kShort);
  }
}

// A Work that fails when waited for.
class FailedWork final : public Work {
 public:
  void wait(Millis) override { throw PeerClosedError("rank 1 closed the connection"); }
  bool is_completed() override { return true; }
};

// Registering twice, after a backward, or an empty hook is a ConfigError naming the rank;
// a hook's failure (no Work, or a Work that fails) comes out of backward().
TEST(ReducerCommHook, MisuseIsAnErrorNamingTheRankAndAHooksFailureEndsTheBackward) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    const std::string rank = "rank " + std::to_string(ctx.rank);
    const auto expect_config_error = [&](const std::function<void()>& call, const char* what) {
      try {
        call();
        ADD_FAILURE() << "no error: " << what;
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(rank), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      }
    };
    const CommHook plain = [&](GradBucket& bucket) {
      scale_(bucket.buffer, 0.5f);
      return group->all_reduce_async(bucket.buffer.span(), ReduceOp::SUM);
    };
    {
      Loose l = make_loose(ctx.rank);
      Reducer reducer(l.params, *group);
      expect_config_error([&] { reducer.register_comm_hook({}); }, "empty");
      reducer.register_comm_hook(plain);
      expect_config_error([&] { reducer.register_comm_hook(plain); }, "only be registered once");
    }
    {
      Loose l = make_loose(ctx.rank);
      Reducer reducer(l.params, *group);
      reducer.prepare_for_backward({});
      loose_loss(l, {0, 1, 2, 3}).backward();
      expect_config_error([&] { reducer.register_comm_hook(plain); }, "before the first backward");
    }
    {
      Loose l = make_loose(ctx.rank);
      Reducer reducer(l.params, *group);
      reducer.register_comm_hook([](GradBucket&) { return WorkPtr(); });
      reducer.prepare_for_backward({});
      expect_config_error([&] { loose_loss(l, {0, 1, 2, 3}).backward(); }, "returned no Work");
    }
    {
      Loose l = make_loose(ctx.rank);
      Reducer reducer(l.params, *group);
      reducer.register_comm_hook([](GradBucket&) { return std::make_shared<FailedWork>(); });
      reducer.prepare_for_backward({});
      EXPECT_THROW(loose_loss(l, {0, 1, 2, 3}).backward(), PeerClosedError);
    }
  });
}

}  // namespace
}  // namespace course::test
