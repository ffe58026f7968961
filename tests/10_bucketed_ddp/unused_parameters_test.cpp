// unused_parameters_test.cpp: lesson 10, parameters that get no gradient: the error
// without find_unused_parameters, the graph walk with it (globally unused gradients stay
// undefined; a parameter used on one rank only is averaged), a gradient marked ready
// twice, and no_sync.
//
//   ./build/solutions/test_10 --gtest_filter='Unused*:NoSync*'
#include <gtest/gtest.h>

#include "ddp_fixtures.h"
#include "distributed_data_parallel.h"
#include "error.h"
#include "reducer.h"

namespace course::test {
namespace {

// Three parameters a, b, c with rank- and index-dependent values.
struct Three {
  Variable a, b, c;
  std::vector<std::pair<std::string, Variable>> named() const {
    return {{"a", a}, {"b", b}, {"c", c}};
  }
};

Three make_three(int rank) {
  const auto values = [rank](int64_t n, float base) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[i] = base + 0.25f * static_cast<float>(i) + static_cast<float>(rank);
    return Tensor::from_vector({n}, v);
  };
  return {Variable(values(3, 1.0f), true).set_name("a"),
          Variable(values(4, -2.0f), true).set_name("b"),
          Variable(values(2, 0.5f), true).set_name("c")};
}

// d/dp sum(p * p) = 2p: the gradient of a parameter is twice its (rank-dependent) value.
Variable squares(const std::vector<Variable>& used) {
  Variable loss;
  for (const Variable& p : used) loss = loss.defined() ? loss + sum(p * p) : sum(p * p);
  return loss;
}

// 2 * the mean over `world` ranks of make_three(r)'s values, i.e. 2 * (v + (world - 1) / 2).
void expect_mean_of_twice(const Variable& p, int world, const std::vector<float>& rank0_values) {
  const std::vector<float> g = p.grad().to_vector();
  ASSERT_EQ(g.size(), rank0_values.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_NEAR(g[i], 2.0f * (rank0_values[i] + 0.5f * static_cast<float>(world - 1)), 1e-5f)
        << p.name() << "[" << i << "]";
  }
}

std::vector<float> rank0_values(const Variable& p, int rank) {
  std::vector<float> v = p.data().to_vector();
  for (float& x : v) x -= static_cast<float>(rank);
  return v;
}

TEST(UnusedParameters, WithoutTheOptionTheNextIterationNamesThem) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Three t = make_three(ctx.rank);
    Reducer reducer(t.named(), *group, {.first_bucket_bytes = 0, .bucket_cap_bytes = 0});
    reducer.prepare_for_backward({});
    squares({t.a, t.c}).backward();  // b takes no part: its bucket never completes
    EXPECT_TRUE(reducer.reduction_pending());
    try {
      reducer.prepare_for_backward({});
      ADD_FAILURE() << "the second iteration started although b never got a gradient";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Expected to have finished reduction in the prior iteration"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("find_unused_parameters"), std::string::npos) << what;
      EXPECT_NE(what.find("rank " + std::to_string(ctx.rank) + ": b (indices 1)"),
                std::string::npos)
          << what;
    }
  });
}

TEST(UnusedParameters, FindUnusedLeavesGloballyUnusedGradientsUndefined) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(3, [&](RankContext& ctx) {
      auto group = make_group(backend, ctx);
      Three t = make_three(ctx.rank);
      Reducer reducer(
          t.named(), *group,
          {.first_bucket_bytes = 0, .bucket_cap_bytes = 0, .find_unused_parameters = true});
      for (int step = 0; step < 3; ++step) {
        for (const Variable& p : {t.a, t.b, t.c}) p.zero_grad();
        Variable loss = squares({t.a, t.c});
        reducer.prepare_for_backward({loss});
        EXPECT_EQ(reducer.unused_parameters(), (std::vector<size_t>{1}));
        loss.backward();
        EXPECT_FALSE(reducer.reduction_pending());
        EXPECT_FALSE(t.b.grad().defined());
        expect_mean_of_twice(t.a, 3, rank0_values(t.a, ctx.rank));
        expect_mean_of_twice(t.c, 3, rank0_values(t.c, ctx.rank));
      }
    });
  }
}

TEST(UnusedParameters, UsedOnOneRankOnlyIsAveragedOverAllRanks) {
  run_ranks(3, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Three t = make_three(ctx.rank);
    Reducer reducer(t.named(), *group, {.find_unused_parameters = true});
    // Only rank 1 uses b: every rank ends with b.grad = 2 * b_rank1 / 3.
    Variable loss = ctx.rank == 1 ? squares({t.a, t.b, t.c}) : squares({t.a, t.c});
    reducer.prepare_for_backward({loss});
    loss.backward();
    ASSERT_TRUE(t.b.grad().defined());
    const std::vector<float> g = t.b.grad().to_vector();
    const std::vector<float> b0 = rank0_values(t.b, ctx.rank);
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], 2.0f * (b0[i] + 1.0f) / 3.0f, 1e-5f);
    expect_mean_of_twice(t.a, 3, rank0_values(t.a, ctx.rank));
  });
}

TEST(UnusedParameters, AGradientMarkedReadyTwiceNamesTheParameter) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Three t = make_three(ctx.rank);
    Reducer reducer(t.named(), *group);
    reducer.prepare_for_backward({});
    squares({t.a}).backward();  // a is ready, the reduction still waits for b and c
    try {
      squares({t.b, t.c, t.a}).backward();  // a used last: its gradient comes first
      ADD_FAILURE() << "a second gradient for a was accepted";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("Expected to mark a variable ready only once"), std::string::npos)
          << what;
      EXPECT_NE(what.find("\"a\""), std::string::npos) << what;
    }
  });
}

// A module whose forward uses `a` and never `b` (an unused head).
class OneHeadUsed : public Module {
 public:
  explicit OneHeadUsed(int rank) {
    a_ = register_parameter("a", Tensor::from_vector({3}, {1.0f + rank, 2.0f, -0.5f}));
    b_ = register_parameter("b", Tensor::from_vector({2}, {0.25f, -1.0f}));
  }
  Variable forward(const Variable& x) override { return sum(a_ * x); }
  std::string describe() const override { return "OneHeadUsed"; }

 private:
  Variable a_, b_;
};

// Through lesson 09's GradientSync seam (the driver's path): without the option the
// missing gradient is reported right after backward; with it, DDP's forward walks the
// graph and the step goes through with b's gradient undefined.
TEST(UnusedParameters, DdpReportsAfterBackwardOrFindsThemFromForward) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    const Variable x(Tensor::from_vector({3}, {0.5f, 1.5f, 2.0f + ctx.rank}));
    {
      OneHeadUsed model(ctx.rank);
      DistributedDataParallel ddp(model, *group);
      ddp.prepare_for_backward();
      model.forward(x).backward();
      try {
        ddp.finish_backward();
        ADD_FAILURE() << "finish_backward accepted a parameter without a gradient";
      } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(": b (indices 1)"), std::string::npos) << e.what();
      }
    }
    OneHeadUsed model(ctx.rank);
    DistributedDataParallel ddp(model, *group, {.find_unused_parameters = true});
    for (int step = 0; step < 2; ++step) {
      model.zero_grad();
      ddp.forward(x).backward();
      ddp.finish_backward();
      const auto params = model.named_parameters();
      EXPECT_FALSE(params[1].second.grad().defined());
      // d/da sum(a * x) = x, averaged over the ranks: x[2] is 2 + rank, so 2.5 there.
      EXPECT_EQ(params[0].second.grad().to_vector(), (std::vector<float>{0.5f, 1.5f, 2.5f}));
    }
  });
}

// K micro-batches, K - 1 of them under no_sync, each loss scaled by 1/K, equal one step
// on the K-times batch in one process; nothing is communicated inside no_sync.
TEST(NoSync, AccumulatedMicroBatchesEqualOneStepOnTheWholeBatch) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(2, [&](RankContext& ctx) {
      auto group = make_group(backend, ctx);
      const int world = 2, K = 3;
      const int64_t per_micro = 4, features = 10, classes = 4;
      const std::vector<int64_t> sizes{features, 16, classes};
      Rng rng(5), oracle_rng(5);
      auto model = make_mlp(sizes, rng);
      auto oracle = make_mlp(sizes, oracle_rng);
      DistributedDataParallel ddp(*model, *group,
                                  {.first_bucket_bytes = 0, .bucket_cap_bytes = 512});
      Sgd opt(model->parameters(), {.lr = 0.1f, .momentum = 0.9f});
      Sgd oracle_opt(oracle->parameters(), {.lr = 0.1f, .momentum = 0.9f});
      for (int step = 0; step < 2; ++step) {
        // Global batch: K micro-batches of world * per_micro rows.
        const auto global = make_batch(K * world * per_micro, features, classes, 10 + step);
        opt.zero_grad();
        for (int k = 0; k < K; ++k) {
          const auto local = slice_batch(global, (k * world + ctx.rank) * per_micro, per_micro);
          const auto backward = [&] {
            scale(cross_entropy(ddp.forward(Variable(local.first)), local.second), 1.0f / K)
                .backward();
          };
          if (k < K - 1) {
            auto guard = ddp.no_sync();
            backward();
            EXPECT_FALSE(ddp.reducer().reduction_pending());
            // Nothing was sent: the ranks' gradients still differ.
            const std::vector<float> sums = gathered_grad_sums(*model, *group);
            EXPECT_NE(sums[0], sums[1]);
          } else {
            backward();
            const std::vector<float> sums = gathered_grad_sums(*model, *group);
            EXPECT_EQ(sums[0], sums[1]);
          }
        }
        opt.step();
        oracle_opt.zero_grad();
        cross_entropy(oracle->forward(Variable(global.first)), global.second).backward();
        oracle_opt.step();
      }
      EXPECT_LT(max_parameter_diff(*model, *oracle), 2e-5f);
    });
  }
}

}  // namespace
}  // namespace course::test
