// pipeline_test.cpp: lesson 16: the executor over real ranks. GPipe and 1F1B at P = 2 and
// 4 and 2 stages x 2 replicas end where one process on the whole batch ends after 20 SGD
// steps (tcp and gloo, and a case whose activations are megabytes); the micro-batches each
// schedule holds at once; a dead stage named by its neighbour (stage, rank, micro-batch in
// flight) at once, a frozen one after the receive's timeout; --checkpoint and --init under
// one process's names; a --limit that would train zero steps refused with the flags.
//
//   ./build/solutions/test_16 --gtest_filter='Pipeline*'
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../collectives/group_factory.h"
#include "checkpoint.h"
#include "device_mesh.h"
#include "error.h"
#include "harness.h"
#include "pp_checkpoint.h"
#include "pp_equivalence.h"
#include "pp_self_check.h"
#include "pp_training.h"
#include "rng.h"
#include "sequential.h"
#include "stage_runner.h"

namespace course::test {
namespace {

// The pipeline's device mesh {dp: world / pp, pp: pp} on `backend` (pp 0: every rank a
// stage), as ./lesson16 builds it.
DeviceMesh pipeline_mesh(const std::string& backend, RankContext& ctx, int pp = 0) {
  Subgroups world = make_subgroups(backend, ctx);
  return init_pipeline_mesh(world, pp);
}

void expect_equals_one_process(int stages, const std::string& backend, EquivalenceCase c) {
  run_ranks(stages, [&](RankContext& ctx) {
    const DeviceMesh mesh = pipeline_mesh(backend, ctx);
    for (const std::string& schedule : schedule_names()) {
      c.schedule = schedule;
      const double diff = compare_with_one_process(mesh, c);
      EXPECT_LE(diff, kPipelineTolerance) << schedule << " on " << stages << " stages, " << backend;
    }
  });
}

TEST(Pipeline, GpipeAndOneFOneBEqualOneProcessOnTwoStages) {
  EquivalenceCase c;
  c.micro_batches = 4;
  expect_equals_one_process(2, "tcp", c);
  c.micro_batches = 3;
  c.micro_batch_rows = 5;
  expect_equals_one_process(2, "gloo", c);
}

TEST(Pipeline, GpipeAndOneFOneBEqualOneProcessOnFourStages) {
  EquivalenceCase c;
  c.micro_batches = 8;
  c.micro_batch_rows = 2;
  expect_equals_one_process(4, "tcp", c);
}

TEST(Pipeline, MegabyteActivationsEqualOneProcess) {
  // The cut falls after the 8192-wide layer: each activation and gradient message is
  // 40 rows x 8192 floats = 1.25 MiB, more than a socket buffer holds.
  EquivalenceCase c;
  c.sizes = {16, 8192, 16, 10};
  c.micro_batches = 3;
  c.micro_batch_rows = 40;
  c.steps = 3;
  c.lr = 0.01f;
  expect_equals_one_process(2, "tcp", c);
}

TEST(Pipeline, TwoStagesTimesTwoReplicasEqualOneProcess) {
  // World rank = replica * 2 + stage; stage s's replicas {s, 2 + s} average gradients.
  run_ranks(4, [](RankContext& ctx) {
    const DeviceMesh mesh = pipeline_mesh("tcp", ctx, 2);
    ASSERT_EQ(mesh.coordinate("pp"), ctx.rank % 2);
    ASSERT_EQ(mesh.coordinate("dp"), ctx.rank / 2);
    EquivalenceCase c;
    c.micro_batches = 3;
    c.micro_batch_rows = 2;
    for (const std::string& schedule : schedule_names()) {
      c.schedule = schedule;
      const double diff = compare_with_one_process(mesh, c);
      EXPECT_LE(diff, kPipelineTolerance) << schedule << " on 2 stages x 2 replicas";
    }
  });
}

TEST(Pipeline, GpipeHoldsEveryMicroBatchAndOneFOneBAtMostPMinusS) {
  run_ranks(4, [](RankContext& ctx) {
    const DeviceMesh mesh = pipeline_mesh("tcp", ctx);
    const std::vector<int64_t> sizes = {20, 16, 16, 16, 16, 10};
    const std::vector<int> bounds = {0, 1, 2, 3, 5};
    const int m = 8;
    const int64_t rows = 3;
    std::vector<float> x(static_cast<size_t>(m * rows * 20));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) / 17.0f;
    std::vector<float> y(static_cast<size_t>(m * rows));
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 10);
    const Batch batch{Tensor::from_vector({m * rows, 20}, x), Tensor::from_vector({m * rows}, y)};
    int64_t gpipe_bytes = 0;
    for (const std::string& schedule : schedule_names()) {
      StageRunner runner(mesh, sizes, 1, schedule, m, rows, bounds);
      const StepStats st = runner.step(batch);
      const int want = schedule == "gpipe" ? m : 4 - ctx.rank;
      EXPECT_EQ(st.peak_in_flight, want) << schedule << " on stage " << ctx.rank;
      const int64_t per_micro_batch = runner.module().saved_bytes();
      EXPECT_EQ(st.peak_saved_bytes, want * per_micro_batch) << schedule;
      if (schedule == "gpipe") gpipe_bytes = st.peak_saved_bytes;
      if (schedule == "1f1b" && ctx.rank == 0) {
        EXPECT_EQ(st.peak_saved_bytes * m, gpipe_bytes * 4) << "stage 0: P / M of GPipe's";
      }
    }
  });
}

// The message of a rank that reached a stub (a TODO of the lesson), or "": on the stubs that
// is the cause, whatever the other ranks then saw (a closed store, a dead peer).
std::string stub_reached(const std::vector<RankOutcome>& outcomes) {
  for (const RankOutcome& o : outcomes) {
    if (o.message.find("not implemented") != std::string::npos) return o.message;
  }
  return "";
}

TEST(Pipeline, ADeadStageIsNamedByItsNeighbourWithTheMicroBatchInFlight) {
  RanksOptions options;
  options.exceptions_fail = false;
  const auto outcomes = run_ranks_collect(
      3,
      [](RankContext& ctx) {
        const DeviceMesh mesh = pipeline_mesh("tcp", ctx);
        const std::vector<int64_t> sizes = {8, 8, 8, 4};
        StageRunner runner(mesh, sizes, 1, "1f1b", 2, 2, {0, 1, 2, 3});
        if (ctx.rank == 2) std::_Exit(0);  // the last stage dies before its first action
        const Batch batch{Tensor::full({4, 8}, 0.5f), Tensor::full({4}, 1.0f)};
        try {
          runner.step(batch);
          ADD_FAILURE() << "stage " << ctx.rank << " finished a step without stage 2";
        } catch (const NetworkError& e) {
          if (ctx.rank == 1) {
            const std::string& what = e.detail();
            EXPECT_NE(what.find("stage 1 (rank 1) in "), std::string::npos) << what;
            EXPECT_NE(what.find("micro-batch"), std::string::npos) << what;
            // From its receive, or to its send when that fails first: either names it.
            EXPECT_NE(what.find("stage 2 (rank 2)"), std::string::npos) << what;
          }
        }
      },
      options);
  ASSERT_EQ(outcomes.size(), 3u);
  if (const std::string todo = stub_reached(outcomes); !todo.empty()) FAIL() << todo;
  // Stage 1 ended its body on its own, having checked the error it caught.
  EXPECT_FALSE(outcomes[1].timed_out);
  EXPECT_EQ(outcomes[1].signal, 0) << outcomes[1].message;
  EXPECT_EQ(outcomes[1].exit_code, 0) << outcomes[1].message;
}

TEST(Pipeline, AFrozenStageIsNamedAfterTheReceiveTimeout) {
  RanksOptions options;
  options.exceptions_fail = false;
  options.timeout = std::chrono::seconds(5);  // then the harness kills the frozen rank
  const auto outcomes = run_ranks_collect(
      3,
      [](RankContext& ctx) {
        const DeviceMesh mesh = pipeline_mesh("tcp", ctx);
        const std::vector<int64_t> sizes = {8, 8, 8, 4};
        StageRunner runner(mesh, sizes, 1, "gpipe", 2, 2, {0, 1, 2, 3});
        runner.executor().set_receive_timeout(std::chrono::milliseconds(1500));
        if (ctx.rank == 2) std::raise(SIGSTOP);  // frozen, as under a debugger
        const Batch batch{Tensor::full({4, 8}, 0.5f), Tensor::full({4}, 1.0f)};
        const auto t0 = std::chrono::steady_clock::now();
        try {
          runner.step(batch);
          ADD_FAILURE() << "stage " << ctx.rank << " finished a step without stage 2";
        } catch (const NetworkError& e) {
          if (ctx.rank == 1) {
            const std::string& what = e.detail();
            EXPECT_NE(what.find("stage 1 (rank 1) in B0"), std::string::npos) << what;
            EXPECT_NE(what.find("from stage 2 (rank 2)"), std::string::npos) << what;
            EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
          }
        }
      },
      options);
  ASSERT_EQ(outcomes.size(), 3u);
  if (const std::string todo = stub_reached(outcomes); !todo.empty()) FAIL() << todo;
  EXPECT_EQ(outcomes[1].signal, 0) << outcomes[1].message;
  EXPECT_EQ(outcomes[1].exit_code, 0) << outcomes[1].message;
}

// --checkpoint from 2 stages x 2 replicas is the one-process model's state dict, under its
// names; --init cuts every stage's layers back out of it, bit for bit.
TEST(PipelineCheckpoint, TwoStagesWriteTheSerialModelAndInitCutsItBack) {
  const std::string path =
      ::testing::TempDir() + "pp_checkpoint_" + std::to_string(::getpid()) + ".safetensors";
  const std::vector<int64_t> sizes = {12, 10, 8, 6, 4};
  run_ranks(4, [&](RankContext& ctx) {
    const DeviceMesh mesh = pipeline_mesh("tcp", ctx, 2);
    const int s = mesh.coordinate("pp");
    const std::vector<int> bounds = partition_layers(layer_parameter_counts(sizes), 2);
    const StageModule stage(sizes, /*seed=*/5, bounds[s], bounds[s + 1]);
    save_pipeline_state(path, mesh, sizes, bounds, stage, {{"epochs", "0"}});
    // Every rank reads the file once rank 0 has written it: stage 0 of each replica, then
    // along each pipeline.
    if (s == 0) mesh.group("dp")->barrier();
    mesh.group("pp")->barrier();
    Rng rng(5);
    const std::shared_ptr<Sequential> serial = make_mlp(sizes, rng);
    Rng other(9);
    const std::shared_ptr<Sequential> loaded = make_mlp(sizes, other);
    load_checkpoint(path, *loaded, nullptr);
    EXPECT_EQ(max_abs_difference(loaded->state_dict(), serial->state_dict()), 0.0);
    StageModule restarted(sizes, /*seed=*/9, bounds[s], bounds[s + 1]);
    load_stage_state(path, sizes, restarted);
    EXPECT_EQ(max_abs_difference(restarted.state_dict(), stage.state_dict()), 0.0);
    // Rank 0 removes it once every rank has read it: along each pipeline, then stage 0 of
    // each replica.
    mesh.group("pp")->barrier();
    if (s == 0) mesh.group("dp")->barrier();
    if (ctx.rank == 0) std::remove(path.c_str());
  });
}

// --limit 100 at --batch-size 128 leaves an epoch no whole batch (the loader drops the
// short one): a usage error naming the sizes before any rank starts, not zero steps trained.
TEST(PipelineFlags, ALimitBelowOneBatchPerReplicaIsAUsageErrorNamingTheSizes) {
  PipelineOptions o;  // --batch-size 128, --micro-batches 4
  o.limit = 100;
  const std::string one = check_pipeline_flags(o, 4);
  EXPECT_NE(one.find("--limit 100"), std::string::npos) << one;
  EXPECT_NE(one.find("--batch-size 128"), std::string::npos) << one;
  EXPECT_NE(one.find("zero steps"), std::string::npos) << one;
  o.limit = 128;
  EXPECT_EQ(check_pipeline_flags(o, 4), "");
  // Two replicas of 2 stages: each takes ceil(limit / 2) examples and a batch of 64.
  o.pp = 2;
  o.limit = 100;
  const std::string two = check_pipeline_flags(o, 4);
  EXPECT_NE(two.find("2 replicas 50"), std::string::npos) << two;
  EXPECT_NE(two.find("batch of 64"), std::string::npos) << two;
  o.limit = 127;
  EXPECT_EQ(check_pipeline_flags(o, 4), "");
  EXPECT_EQ(zero_steps_problem(60000, 1, 128), "");
  EXPECT_NE(zero_steps_problem(0, 1, 1), "");
}

}  // namespace
}  // namespace course::test
