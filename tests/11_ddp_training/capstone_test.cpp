// capstone_test.cpp: lesson 11, the training program's guarantees: distributed evaluation
// equals one process exactly; a resumed run ends bit-identical to an uninterrupted one; a
// checkpoint of another configuration is refused saying what differs; a half-written
// checkpoint is never loaded; a rank killed with SIGKILL mid-run, then --resume, ends with
// the parameters of a run that never failed.
//
//   ./build/solutions/test_11 --gtest_filter='Capstone*:DistributedEval*'
#include "capstone.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../collectives/group_factory.h"
#include "bn_mlp.h"
#include "distributed_eval.h"
#include "training_checkpoint.h"

namespace course::test {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed when the test ends.
struct TempDir {
  explicit TempDir(const std::string& name)
      : path((fs::temp_directory_path() / ("course-l11-" + std::to_string(::getpid()) + "-" + name))
                 .string()) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string path;
};

// Small enough for seconds: 640 training examples, one hidden layer of 16, 3 epochs.
CapstoneOptions tiny(const std::string& dir) {
  CapstoneOptions o;
  o.train.limit = 640;
  o.train.hidden = {16};
  o.train.batch_size = 32;
  o.train.epochs = 3;
  o.train.quiet = true;
  o.run_dir = dir;
  return o;
}

CapstoneResult run(RankContext& ctx, const CapstoneOptions& o) {
  auto pg = make_group("tcp", ctx, "ddp");
  auto bn = make_group("tcp", ctx, "syncbn");
  std::ostringstream sink;
  return run_capstone(o, *pg, *bn, sink);
}

bool bit_identical(const NamedTensors& a, const NamedTensors& b, std::string* where) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    const std::vector<float> u = a[k].second.to_vector(), v = b[k].second.to_vector();
    if (a[k].first != b[k].first || u.size() != v.size() ||
        std::memcmp(u.data(), v.data(), u.size() * sizeof(float)) != 0) {
      *where = a[k].first;
      return false;
    }
  }
  return true;
}

// Rank 0 writes the final state of an uninterrupted run to `file`.
void reference_run(int world, const CapstoneOptions& o, const std::string& file) {
  run_ranks(world, [&](RankContext& ctx) {
    const CapstoneResult r = run(ctx, o);
    if (ctx.rank == 0) save_safetensors(file, r.final_state);
  });
}

void expect_same_as_reference(const NamedTensors& got, const std::string& file) {
  std::string where;
  EXPECT_TRUE(bit_identical(got, load_safetensors(file).tensors, &where))
      << "the resumed run differs from the uninterrupted one in \"" << where << "\"";
}

TEST(DistributedEvalTest, IndicesCoverEveryExampleOnce) {
  for (int64_t n : {1, 7, 10, 1001}) {
    for (int world = 1; world <= 4; ++world) {
      std::multiset<int64_t> seen;
      for (int r = 0; r < world; ++r) {
        for (int64_t i : evaluation_indices(n, world, r)) seen.insert(i);
      }
      ASSERT_EQ(static_cast<int64_t>(seen.size()), n) << "n " << n << " world " << world;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen.count(i), 1u) << i;
    }
  }
}

// 1001 validation examples on 3 ranks (334 + 334 + 333, one padding position): the same
// correct count and loss as one process.
TEST(DistributedEvalTest, EqualsOneProcessForASetThatDoesNotDivide) {
  constexpr int64_t kRows = 1001, kIn = 6, kClasses = 4;
  std::vector<float> x(kRows * kIn), y(kRows);
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>(std::sin(0.11 * k) * (1 + k % 5));
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>((i * 3 + i / 7) % kClasses);
  const Dataset data{Tensor::from_vector({kRows, kIn}, x), Tensor::from_vector({kRows}, y),
                     kClasses};
  auto make_model = [] {
    Rng rng(9);
    auto m = make_bn_mlp({kIn, 12, kClasses}, rng);
    m->set_training(false);
    return m;
  };
  // The one-process oracle: lesson 07's evaluate over every row once.
  auto serial_model = make_model();
  DataLoader loader(data, 100, std::make_shared<SequentialSampler>(kRows));
  const EvalStats want = evaluate(*serial_model, loader);
  run_ranks(3, [&](RankContext& ctx) {
    auto pg = make_group("tcp", ctx, "eval");
    auto model = make_model();
    const EvalStats got = evaluate_distributed(*model, data, *pg, 128);
    EXPECT_EQ(got.samples, kRows);
    EXPECT_EQ(got.accuracy, want.accuracy) << "the padding counted twice?";
    EXPECT_NEAR(got.loss, want.loss, 1e-5 * (1 + want.loss));
  });
}

// Rank 0's checkpoint reaches every rank: names, shapes and metadata in one message, then
// each tensor, one of them 24 MiB (far above the socket buffers), under a short timeout.
TEST(CapstoneTest, CheckpointBroadcastCarriesTensMiBToEveryRank) {
  constexpr int64_t kBig = int64_t{6} << 20;  // floats
  run_ranks(3,
            [](RankContext& ctx) {
              auto pg = make_group("tcp", ctx, "ddp");
              NamedTensors tensors;
              std::map<std::string, std::string> meta;
              if (ctx.rank == 0) {
                std::vector<float> big(static_cast<size_t>(kBig));
                for (size_t k = 0; k < big.size(); ++k)
                  big[k] = static_cast<float>(k % 9973) - 17.5f;
                tensors = {
                    {"0.weight", Tensor::from_vector({kBig / 1024, 1024}, big)},
                    {"optimizer.0.momentum_buffer", Tensor::from_vector({3}, {1.5f, -2, 4})}};
                meta = {{"epoch", "7"}, {"config.world_size", "3"}};
              }
              broadcast_named_tensors(tensors, meta, *pg, 0);
              ASSERT_EQ(tensors.size(), 2u);
              EXPECT_EQ(tensors[0].first, "0.weight");
              EXPECT_EQ(tensors[0].second.shape(), (Shape{kBig / 1024, 1024}));
              const std::vector<float> got = tensors[0].second.to_vector();
              for (size_t k = 0; k < got.size(); k += 4099) {
                ASSERT_EQ(got[k], static_cast<float>(k % 9973) - 17.5f) << k;
              }
              EXPECT_EQ(tensors[1].second.to_vector(), (std::vector<float>{1.5f, -2, 4}));
              EXPECT_EQ(meta.at("epoch"), "7");
              EXPECT_EQ(meta.at("config.world_size"), "3");
            },
            {.timeout = std::chrono::seconds(20)});
}

TEST(CapstoneTest, ResumeIsBitIdenticalToAnUninterruptedRun) {
  TempDir ref("resume-ref"), dir("resume");
  reference_run(2, tiny(ref.path), ref.path + "/final.safetensors");
  CapstoneOptions first = tiny(dir.path);
  first.train.epochs = 1;  // stop after epoch 1 ...
  run_ranks(2, [&](RankContext& ctx) {
    const CapstoneResult r = run(ctx, first);
    // One epoch of 640 examples stays below the default target: the verdict says that
    // the target needs the whole run, and how to set another.
    EXPECT_FALSE(r.verdict.passed);
    EXPECT_NE(r.verdict.detail.find("a short run (--epochs under 10, or --limit)"),
              std::string::npos)
        << r.verdict.detail;
  });
  CapstoneOptions rest = tiny(dir.path);
  rest.resume = true;  // ... and continue to epoch 3 in a fresh set of processes
  run_ranks(2, [&](RankContext& ctx) {
    const CapstoneResult r = run(ctx, rest);
    EXPECT_EQ(r.resumed_from, 1);
    if (ctx.rank == 0) {
      EXPECT_EQ(r.history.size(), 3u) << "the curves carry on across the restart";
      expect_same_as_reference(r.final_state, ref.path + "/final.safetensors");
    }
  });
}

TEST(CapstoneTest, SyncBatchNormRunResumesBitIdentically) {
  TempDir ref("syncbn-ref"), dir("syncbn");
  CapstoneOptions o = tiny(ref.path);
  o.sync_bn = true;
  o.train.epochs = 2;
  reference_run(2, o, ref.path + "/final.safetensors");
  o.run_dir = dir.path;
  o.train.epochs = 1;
  run_ranks(2, [&](RankContext& ctx) { run(ctx, o); });
  o.train.epochs = 2;
  o.resume = true;
  run_ranks(2, [&](RankContext& ctx) {
    const CapstoneResult r = run(ctx, o);
    if (ctx.rank == 0) expect_same_as_reference(r.final_state, ref.path + "/final.safetensors");
  });
}

TEST(CapstoneTest, CheckpointOfAnotherConfigurationIsRefused) {
  TempDir dir("refuse");
  CapstoneOptions o = tiny(dir.path);
  o.train.epochs = 1;
  run_ranks(2, [&](RankContext& ctx) { run(ctx, o); });
  o.resume = true;
  o.train.epochs = 2;
  o.train.batch_size = 16;
  // Three ranks would split the data differently; so would another batch size.
  run_ranks(3, [&](RankContext& ctx) {
    try {
      run(ctx, o);
      ADD_FAILURE() << "rank " << ctx.rank << " resumed from a mismatching checkpoint";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      if (ctx.rank == 0) {
        EXPECT_NE(what.find("world_size: checkpoint 2, this run 3"), std::string::npos) << what;
        EXPECT_NE(what.find("batch_size: checkpoint 32, this run 16"), std::string::npos) << what;
      } else {
        EXPECT_NE(what.find("rank 0 refused"), std::string::npos) << what;
      }
    }
  });
}

TEST(CapstoneTest, HalfWrittenCheckpointIsNeverLoaded) {
  TempDir dir("half");
  CapstoneOptions o = tiny(dir.path);
  o.train.epochs = 1;
  run_ranks(2, [&](RankContext& ctx) { run(ctx, o); });
  const std::string good = checkpoint_path(o.checkpoints(), 1);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // What a crash during a write leaves (the temporary file), and a file cut short.
  std::ofstream(checkpoint_path(o.checkpoints(), 2) + ".tmp.4242", std::ios::binary)
      << bytes.substr(0, bytes.size() / 2);
  std::ofstream(checkpoint_path(o.checkpoints(), 3), std::ios::binary)
      << bytes.substr(0, bytes.size() - 100);
  o.resume = true;
  o.train.epochs = 2;
  o.save_checkpoints = false;
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group("tcp", ctx, "ddp");
    auto bn = make_group("tcp", ctx, "syncbn");
    std::ostringstream log;
    o.train.quiet = false;
    const CapstoneResult r = run_capstone(o, *pg, *bn, log);
    EXPECT_EQ(r.resumed_from, 1) << log.str();
    if (ctx.rank == 0) {
      EXPECT_NE(log.str().find("skipping " + checkpoint_path(o.checkpoints(), 3)),
                std::string::npos)
          << log.str();
    }
  });
}

TEST(CapstoneTest, KilledRankThenResumeEndsWithTheSameParameters) {
  TempDir ref("kill-ref"), dir("kill");
  reference_run(2, tiny(ref.path), ref.path + "/final.safetensors");
  CapstoneOptions o = tiny(dir.path);
  o.crash_step = 15;  // 640 / 2 / 32 = 10 steps per epoch: the middle of epoch 2
  o.crash_rank = 1;
  const std::vector<RankOutcome> outcomes =
      run_ranks_collect(2, [&](RankContext& ctx) { run(ctx, o); },
                        {.timeout = std::chrono::seconds(60), .exceptions_fail = true});
  EXPECT_EQ(outcomes[1].signal, SIGKILL) << "rank 1 should have been killed";
  EXPECT_NE(outcomes[0].exit_code, 0) << "rank 0 cannot finish without rank 1";
  o.crash_step = -1;
  o.resume = true;
  run_ranks(2, [&](RankContext& ctx) {
    const CapstoneResult r = run(ctx, o);
    EXPECT_GE(r.resumed_from, 1);
    if (ctx.rank == 0) expect_same_as_reference(r.final_state, ref.path + "/final.safetensors");
  });
}

}  // namespace
}  // namespace course::test
