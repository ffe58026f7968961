// sharding_test.cpp: lesson 13: the ring's reduce-scatter and all-gather against serial
// oracles, and ZeRO-1, ZeRO-2 and FSDP against lesson 10's DDP (SGD and Adam, 1 to 4
// ranks, tcp and gloo, a parameter count no world divides), the memory they hold, the
// budget, the state dicts and the errors.
//
//   ./build/solutions/test_13
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "../collectives/group_factory.h"
#include "ddp_training.h"
#include "distributed_data_parallel.h"
#include "error.h"
#include "fsdp.h"
#include "harness.h"
#include "memory_ledger.h"
#include "ops.h"
#include "optimizer.h"
#include "ring_halves.h"
#include "rng.h"
#include "sequential.h"
#include "sharding_bench.h"
#include "sharding_self_check.h"
#include "sharding_training.h"
#include "tensor_ops.h"

namespace course::test {
namespace {

// Rank- and index-dependent integers and quarters: every sum over up to 8 ranks is exact.
float value(int rank, size_t i) {
  return static_cast<float>(static_cast<int64_t>((i * 29 + static_cast<size_t>(rank) * 13) % 97) -
                            48) +
         0.25f * static_cast<float>(rank);
}

// ---- The ring's halves, called directly with small chunks (several per slice) --------

TEST(RingHalves, ReduceScatterGivesEachRankItsOwnSliceReduced) {
  for (int world : {2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto comm = make_tcp_comm(ctx);
      for (size_t k : {size_t{0}, size_t{1}, size_t{5}, size_t{23}}) {
        for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG, ReduceOp::MAX}) {
          std::vector<float> input(k * ctx.world);
          for (size_t i = 0; i < input.size(); ++i) input[i] = value(ctx.rank, i);
          std::vector<float> output(k, -9.0f);
          reduce_scatter_ring(*comm, input, output, op, /*chunk_elements=*/4,
                              /*sender_thread_bytes=*/k % 2 == 0 ? 0 : 1 << 20);
          for (size_t j = 0; j < k; ++j) {
            const size_t i = static_cast<size_t>(ctx.rank) * k + j;
            float want = op == ReduceOp::MAX ? value(0, i) : 0.0f;
            for (int r = 0; r < ctx.world; ++r) {
              want = op == ReduceOp::MAX ? std::max(want, value(r, i)) : want + value(r, i);
            }
            if (op == ReduceOp::AVG) want /= static_cast<float>(ctx.world);
            ASSERT_NEAR(output[j], want, 1e-6f * std::fabs(want))
                << "k " << k << " op " << reduce_op_name(op) << " element " << j;
          }
          // In place: the output is this rank's slice of the input.
          std::span<float> mine = std::span<float>(input).subspan(ctx.rank * k, k);
          reduce_scatter_ring(*comm, input, mine, op, 4);
          for (size_t j = 0; j < k; ++j) ASSERT_EQ(mine[j], output[j]) << "in place, k " << k;
        }
      }
    });
  }
}

TEST(RingHalves, AllGatherPutsEveryRanksInputInItsSlice) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto comm = make_tcp_comm(ctx);
      for (size_t k : {size_t{0}, size_t{1}, size_t{6}, size_t{17}}) {
        std::vector<float> input(k);
        for (size_t j = 0; j < k; ++j) input[j] = value(ctx.rank, j) + 100.0f * ctx.rank;
        std::vector<float> output(k * ctx.world, -9.0f);
        all_gather_ring(*comm, input, output, /*chunk_elements=*/4);
        for (size_t i = 0; i < output.size(); ++i) {
          const int owner = static_cast<int>(i / k);
          ASSERT_EQ(output[i], value(owner, i % k) + 100.0f * owner) << "k " << k << " at " << i;
        }
        std::vector<float> in_place(k * ctx.world, -9.0f);
        std::copy(input.begin(), input.end(),
                  in_place.begin() + static_cast<int64_t>(ctx.rank * k));
        all_gather_ring(*comm, std::span<const float>(in_place).subspan(ctx.rank * k, k), in_place,
                        4);
        ASSERT_EQ(in_place, output) << "in place, k " << k;
      }
    });
  }
}

TEST(RingHalves, WrongSizesAreErrorsBeforeAnyPayloadMoves) {
  run_ranks(2, [](RankContext& ctx) {
    // A failed call aborts its group (process_group_tcp.h): one group per check.
    std::vector<float> input(7), output(3);
    auto group = make_group("tcp", ctx);
    EXPECT_THROW(group->reduce_scatter(input, output, ReduceOp::SUM), ConfigError);
    auto other = make_group("tcp", ctx, "pg2");
    EXPECT_THROW(other->all_gather(output, input), ConfigError);
  });
  // The ranks disagree on the size: the ring's header names both counts.
  const std::vector<RankOutcome> outcomes = run_ranks_collect(
      2,
      [](RankContext& ctx) {
        auto comm = make_tcp_comm(ctx, "comm", std::chrono::seconds(5));
        std::vector<float> input(ctx.rank == 0 ? 8 : 12), output(input.size() / 2);
        reduce_scatter_ring(*comm, input, output, ReduceOp::SUM);
      },
      {.timeout = std::chrono::seconds(20), .exceptions_fail = false});
  for (const RankOutcome& outcome : outcomes) {
    EXPECT_EQ(outcome.exit_code, 2) << outcome.message;
    EXPECT_FALSE(outcome.timed_out);
  }
  EXPECT_NE(outcomes[0].message.find("12"), std::string::npos) << outcomes[0].message;
}

// The group's async halves keep their place in the queue behind all_reduce_async, and a
// 16 MiB unit goes through both under a short timeout.
TEST(RingHalves, AsyncHalvesOfSixteenMiBInOrderWithAllReduce) {
  run_ranks(2,
            [](RankContext& ctx) {
              auto group = make_group("tcp", ctx);
              const size_t n = size_t{4} << 20;  // 16 MiB of floats
              std::vector<float> big(n), shard(n / 2), again(n);
              for (size_t i = 0; i < n; ++i) big[i] = static_cast<float>(i % 64 + 64 * ctx.rank);
              std::vector<float> small{static_cast<float>(ctx.rank + 1)};
              WorkPtr a = group->all_reduce_async(small, ReduceOp::SUM);
              WorkPtr b = group->reduce_scatter_async(big, shard, ReduceOp::SUM);
              WorkPtr c = group->all_gather_async(shard, again);
              c->wait();
              b->wait();
              a->wait();
              EXPECT_EQ(small[0], 3.0f);
              int64_t wrong = 0;
              for (size_t i = 0; i < n; ++i)
                wrong += again[i] != static_cast<float>(2 * (i % 64) + 64);
              EXPECT_EQ(wrong, 0);
            },
            {.timeout = std::chrono::seconds(40)});
}

// ---- The stages against DDP --------------------------------------------------------------

// A small MLP with 227 parameters (no world from 2 to 4 divides it), rank-dependent batches.
const std::vector<int64_t> kSizes{12, 9, 7, 5};

std::vector<Batch> batches(int rank, int steps) {
  std::vector<Batch> out;
  for (int step = 0; step < steps; ++step) {
    Tensor x = Tensor::empty({6, 12});
    Tensor y = Tensor::empty({6});
    for (int64_t i = 0; i < 6; ++i) {
      y.data()[i] = static_cast<float>((i + rank + step) % 5);
      for (int64_t j = 0; j < 12; ++j) {
        x.data()[i * 12 + j] =
            std::sin(0.3f * static_cast<float>((i + 1) * (j + 2) + 7 * rank + 11 * step));
      }
    }
    out.push_back({x, y});
  }
  return out;
}

DdpTrainingOptions optimizer_options(const std::string& name) {
  DdpTrainingOptions o;
  o.optimizer = name;
  o.lr = name == "adam" ? 1e-2f : 0.1f;
  o.seed = 3;
  return o;
}

TEST(Sharding, EveryStageEndsAtDdpsParametersWithSgdAndAdam) {
  for (const std::string& backend : available_backends()) {
    for (int world : {1, 2, 3, 4}) {
      SCOPED_TRACE(backend + ", " + std::to_string(world) + " rank(s)");
      run_ranks(world, [&](RankContext& ctx) {
        auto group = make_group(backend, ctx);
        const std::vector<Batch> steps = batches(ctx.rank, 3);
        for (const std::string& name : std::vector<std::string>{"sgd", "adam"}) {
          const DdpTrainingOptions o = optimizer_options(name);
          for (int stage : {1, 2, 3}) {
            const ShardedComparison c = compare_sharded_with_ddp(
                o, {.stage = stage, .optimizer_slots = name == "adam" ? 2 : 1}, kSizes, steps,
                *group);
            EXPECT_LE(c.difference, sharded_tolerance(o)) << name << ", stage " << stage;
            EXPECT_EQ(c.problem, "") << name << ", stage " << stage;
          }
        }
      });
    }
  }
}

// Each unit's parameters live in the unit's flat buffer; the shards tile it; a stage 3
// unit's full buffer is freed outside forward and backward, and reading a parameter then
// is an error that says so.
TEST(Sharding, ShardsTileTheUnitsAndStageThreeFreesWhatItGathered) {
  run_ranks(3, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Rng rng(1 + static_cast<uint64_t>(ctx.rank));
    MemoryLedger ledger(ctx.rank);
    ShardedModel model(make_mlp(kSizes, rng), *group, {.stage = 3, .optimizer_slots = 0}, ledger);
    ASSERT_EQ(model.units().size(), 3u);  // one per Linear
    int64_t total = 0;
    for (const FlatUnit& unit : model.units()) {
      EXPECT_EQ(unit.padded % 3, 0);
      EXPECT_LT(unit.padded - unit.numel, 3);
      EXPECT_EQ(unit.shard_numel * 3, unit.padded);
      EXPECT_FALSE(unit.gathered);
      total += unit.numel;
    }
    EXPECT_EQ(total, 227);
    EXPECT_EQ(ledger.live(MemoryKind::gathered), 0);
    EXPECT_THROW((void)model.units()[0].params[0].data().data(), ConfigError);

    Sgd sgd(model.shard_parameters(), {.lr = 0.1f});
    const Batch batch = batches(ctx.rank, 1)[0];
    ddp_train_step(model, sgd, model, batch);
    EXPECT_EQ(ledger.live(MemoryKind::gathered), 0) << "a unit is still gathered after the step";
    EXPECT_EQ(ledger.live(MemoryKind::communication), 0) << "a gradient buffer was not freed";
    EXPECT_GT(ledger.peak_bytes(), ledger.live_bytes());
    EXPECT_EQ(model.schedule_problem(), "");
    // The full state dict gathers; every rank gets rank 0's parameters.
    EXPECT_EQ(check_identical_across_ranks(model.full_state_dict(), *group), "");
  });
}

// The ledger's peak against the model of fsdp.h, per stage, on 2 and 4 ranks: a model of
// 8 equal units, Adam's two slots.
TEST(Sharding, PeakModelStateIsWithinTenPercentOfTheModel) {
  for (int world : {2, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto group = make_group("tcp", ctx);
      const std::vector<int64_t> sizes{64, 64, 64, 64, 64, 64, 64, 64, 64};
      for (int stage : {1, 2, 3}) {
        Rng rng(2);
        MemoryLedger ledger(ctx.rank);
        ShardedModel model(make_mlp(sizes, rng), *group, {.stage = stage, .optimizer_slots = 2},
                           ledger);
        Adam adam(model.shard_parameters(), {.lr = 1e-3f});
        Tensor x = Tensor::empty({4, 64});
        for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::cos(0.1f * i + ctx.rank);
        const Tensor y = Tensor::from_vector({4}, {1, 2, 3, 4});
        for (int step = 0; step < 2; ++step) ddp_train_step(model, adam, model, {x, y});
        const double modelled = modelled_bytes_per_rank(stage, model.padded_count(), ctx.world, 2,
                                                        model.largest_unit(), 2);
        const auto peak = static_cast<double>(ledger.peak_bytes());
        EXPECT_NEAR(peak / modelled, 1.0, 0.10) << "stage " << stage << ": " << peak << " bytes";
        EXPECT_EQ(model.schedule_problem(), "") << "stage " << stage;
      }
    });
  }
}

// The schedule of fsdp.h, step by step, on a model of five units and 3 ranks: with and
// without prefetch, which units are gathered when each unit runs forward and when its
// pre_backward returns (ShardedModel::schedule_problem watches), every unsharded gradient
// buffer freed after the step (stages 2 and 3), and what stage 3 holds between steps.
TEST(Sharding, EachUnitIsGatheredAndFreedInItsTurn) {
  run_ranks(3, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    const std::vector<int64_t> sizes{12, 10, 9, 8, 7, 5};
    for (int stage : {2, 3}) {
      for (bool prefetch : {true, false}) {
        SCOPED_TRACE("stage " + std::to_string(stage) + (prefetch ? ", prefetch" : ""));
        Rng rng(12);
        MemoryLedger ledger(ctx.rank);
        ShardedModel model(make_mlp(sizes, rng), *group,
                           {.stage = stage, .prefetch = prefetch, .optimizer_slots = 1}, ledger);
        ASSERT_EQ(model.units().size(), 5u);
        Sgd sgd(model.shard_parameters(), {.lr = 0.05f, .momentum = 0.9f});
        for (int step = 0; step < 2; ++step) {
          Tensor x = Tensor::empty({4, 12});
          for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::sin(0.3f * i + ctx.rank);
          ddp_train_step(model, sgd, model, {x, Tensor::from_vector({4}, {0, 1, 2, 3})});
          EXPECT_EQ(model.schedule_problem(), "") << "step " << step;
          EXPECT_EQ(ledger.live(MemoryKind::communication), 0) << "step " << step;
          if (stage == 3) {
            EXPECT_EQ(ledger.live(MemoryKind::gathered), 0) << "step " << step;
          }
        }
      }
    }
  });
}

// A rank that never builds its sharded model leaves the others waiting in the
// constructor's broadcast: the hang report names lesson 13's step, not only lesson 03's
// broadcast under it.
TEST(Sharding, AHangInTheConstructorIsReportedAsLesson13s) {
  RanksOptions options;
  options.timeout = std::chrono::milliseconds(2000);
  const std::vector<RankOutcome> out = run_ranks_collect(
      2,
      [](RankContext& ctx) {
        auto group = make_group("tcp", ctx);
        if (ctx.rank == 0) {
          std::this_thread::sleep_for(std::chrono::hours(1));  // never joins
        }
        Rng rng(3);
        MemoryLedger ledger(ctx.rank);
        ShardedModel model(make_mlp(kSizes, rng), *group, {.stage = 3}, ledger);
      },
      options);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].timed_out);
  EXPECT_NE(out[1].message.find("ShardedModel (lesson 13): the constructor broadcasting unit 0's "
                                "parameters from rank 0: broadcast"),
            std::string::npos)
      << out[1].message;
}

// A budget of 0.05 MiB is not printed as "0.0 MiB", which reads as no budget at all.
TEST(Sharding, SmallMemoryFiguresKeepTheirDigits) {
  EXPECT_EQ(format_mib(0), "0.0 MiB");
  EXPECT_EQ(format_mib(12.3 * (1 << 20)), "12.3 MiB");
  EXPECT_EQ(format_mib(static_cast<double>(static_cast<int64_t>(0.05 * (1 << 20)))), "51.2 KiB");
  EXPECT_EQ(format_mib(1000), "1000 bytes");
}

TEST(Sharding, AMemoryBudgetTooSmallFailsNamingWhatDidNotFit) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Rng rng(4);
    MemoryLedger ledger(ctx.rank, /*budget_bytes=*/1000);
    try {
      ShardedModel model(make_mlp(kSizes, rng), *group, {.stage = 3}, ledger);
      ADD_FAILURE() << "shards of 456 bytes, their gradients and Adam's state fit in 1000 bytes?";
    } catch (const MemoryBudgetError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("rank " + std::to_string(ctx.rank)), std::string::npos) << what;
      EXPECT_NE(what.find("no room for the parameter shard of unit"), std::string::npos) << what;
      EXPECT_NE(what.find("--memory-budget"), std::string::npos) << what;
    }
  });
}

TEST(Sharding, FullStateDictsRoundTripAndAMisshapedOneIsRefused) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    for (int stage : {1, 2, 3}) {
      Rng rng(6);
      MemoryLedger ledger(ctx.rank);
      ShardedModel model(make_mlp(kSizes, rng), *group, {.stage = stage, .optimizer_slots = 0},
                         ledger);
      Sgd sgd(model.shard_parameters(), {.lr = 0.1f});
      ddp_train_step(model, sgd, model, batches(ctx.rank, 1)[0]);    // a step first: the shards
      EXPECT_EQ(model.schedule_problem(), "") << "stage " << stage;  // moved
      NamedTensors state = model.full_state_dict();
      ASSERT_EQ(state.size(), 6u);
      EXPECT_EQ(state[0].first, "0.weight");
      for (auto& [name, tensor] : state) {
        for (float& v : tensor.span()) v = v * 2.0f + 1.0f;
      }
      model.load_full_state_dict(state);
      const NamedTensors back = model.full_state_dict();
      EXPECT_EQ(max_abs_difference(state, back), 0.0) << "stage " << stage;
      state[2].second = Tensor::zeros({3, 3});
      EXPECT_THROW(model.load_full_state_dict(state), ConfigError);
    }
  });
}

// ZeroRedundancyOptimizer's consolidate_state_dict: Adam's moments, gathered on rank 1 and
// cut back into parameters, equal those of lesson 10's DDP after the same steps.
TEST(Sharding, ConsolidatedOptimizerStateEqualsDdpsAdam) {
  run_ranks(3, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    const DdpTrainingOptions o = optimizer_options("adam");
    std::shared_ptr<Sequential> reference = make_ddp_model(o, kSizes, ctx.rank);
    DistributedDataParallel ddp(*reference, *group, {.gradient_as_bucket_view = true});
    Adam reference_adam(reference->parameters(), {.lr = o.lr});
    MemoryLedger ledger(ctx.rank);
    ShardedModel model(make_ddp_model(o, kSizes, ctx.rank), *group, {.stage = 2}, ledger);
    Adam adam(model.shard_parameters(), {.lr = o.lr});
    for (const Batch& batch : batches(ctx.rank, 2)) {
      ddp_train_step(*reference, reference_adam, ddp, batch);
      ddp_train_step(model, adam, model, batch);
    }
    EXPECT_EQ(model.schedule_problem(), "");
    const NamedTensors consolidated = model.consolidate_optimizer_state(adam, /*to=*/1);
    if (ctx.rank != 1) {
      EXPECT_TRUE(consolidated.empty());
      return;
    }
    const auto named = reference->named_parameters();
    ASSERT_EQ(consolidated.size(), 2 * named.size());          // exp_avg and exp_avg_sq of each
    const NamedTensors want = reference_adam.state_tensors();  // "<i>.<key>"
    for (const auto& [name, got] : consolidated) {
      const size_t split = name.rfind(".exp_avg");
      ASSERT_NE(split, std::string::npos) << name;
      size_t i = 0;
      while (i < named.size() && named[i].first != name.substr(0, split)) ++i;
      ASSERT_LT(i, named.size()) << name;
      const std::string key = std::to_string(i) + name.substr(split);
      const auto it = std::find_if(want.begin(), want.end(),
                                   [&](const auto& entry) { return entry.first == key; });
      ASSERT_NE(it, want.end()) << key;
      ASSERT_EQ(got.shape(), it->second.shape()) << name;
      EXPECT_LE(max_abs_diff(got, it->second), 1e-6f) << name;
    }
    Adam wrong(reference->parameters(), {.lr = 1e-3f});
    EXPECT_THROW(model.consolidate_optimizer_state(wrong, 0), ConfigError);
  });
}

// A parameter that gets no gradient: every rank fails naming the unit, no hang.
TEST(Sharding, AParameterWithoutAGradientIsAnErrorNamingTheUnit) {
  run_ranks(2, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    Rng rng(8);
    MemoryLedger ledger(ctx.rank);
    ShardedModel model(make_mlp(kSizes, rng), *group, {.stage = 2}, ledger);
    const Batch batch = batches(ctx.rank, 1)[0];
    model.prepare_for_backward();
    // Only the output's bias takes part: the others never see a gradient. Unit 2, the
    // last, is collected first.
    const Variable out = model.forward(Variable(batch.inputs));
    sum(model.units()[2].params[1] * Variable(Tensor::full({5}, 1.0f))).backward();
    (void)out;
    try {
      model.finish_backward();
      ADD_FAILURE() << "finish_backward accepted units without gradients";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unit 2 got 1 of its 2"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace course::test
