// faults_test.cpp: lesson 11 against a careful user's faults: a flipped byte in a
// checkpoint, edited metadata, every checkpoint unreadable, torn temporary files of dead
// writers, NaN in --init weights, out-of-range flags, and --checkpoint (given code: these
// tests pass on the stubs and are worth 0 points).
//
//   ./build/solutions/test_11 --gtest_filter='CapstoneFaults*'
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../collectives/group_factory.h"
#include "bn_mlp.h"
#include "capstone.h"
#include "capstone_flags.h"
#include "checkpoint.h"
#include "error.h"
#include "flags.h"
#include "run_dir_lock.h"
#include "training_checkpoint.h"

namespace course::test {
namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  explicit ScratchDir(const std::string& name)
      : path((fs::temp_directory_path() /
              ("course-l11-faults-" + std::to_string(::getpid()) + "-" + name))
                 .string()) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() { fs::remove_all(path); }
  std::string path;
};

CapstoneOptions tiny(const std::string& dir, int epochs) {
  CapstoneOptions o;
  o.train.limit = 320;
  o.train.hidden = {8};
  o.train.batch_size = 32;
  o.train.epochs = epochs;
  o.train.quiet = true;
  o.run_dir = dir;
  return o;
}

CapstoneResult run(RankContext& ctx, const CapstoneOptions& o, std::ostream& log) {
  auto pg = make_group("tcp", ctx, "ddp");
  auto bn = make_group("tcp", ctx, "syncbn");
  return run_capstone(o, *pg, *bn, log);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Rewrites a checkpoint with its metadata changed by `edit` (tensors untouched).
void edit_metadata(const std::string& path,
                   const std::function<void(std::map<std::string, std::string>&)>& edit) {
  SafetensorsFile f = load_safetensors(path);
  edit(f.metadata);
  save_safetensors(path, f.tensors, f.metadata);
}

TEST(CapstoneFaults, AFlippedByteInTensorDataIsCaughtAndResumeFallsBack) {
  ScratchDir dir("flip");
  CapstoneOptions o = tiny(dir.path, 2);
  std::ostringstream unused;
  run_ranks(2, [&](RankContext& ctx) { run(ctx, o, unused); });
  const std::string newest = checkpoint_path(o.checkpoints(), 2);
  std::string bytes = read_bytes(newest);
  bytes[bytes.size() - 7] ^= 0x10;  // inside the last tensor's data
  write_bytes(newest, bytes);
  o.resume = true;
  o.save_checkpoints = false;
  o.train.quiet = false;
  run_ranks(2, [&](RankContext& ctx) {
    std::ostringstream log;
    const CapstoneResult r = run(ctx, o, log);
    EXPECT_EQ(r.resumed_from, 1) << "the corrupted epoch 2 was loaded, or nothing\n" << log.str();
    if (ctx.rank == 0) {
      EXPECT_NE(log.str().find("skipping " + newest + ": "), std::string::npos) << log.str();
      EXPECT_NE(log.str().find("does not match its checksum"), std::string::npos) << log.str();
    }
  });
}

TEST(CapstoneFaults, EditedMetadataIsNamedAndNoSoundCheckpointRefusesToStartFresh) {
  ScratchDir dir("meta");
  CapstoneOptions o = tiny(dir.path, 2);
  std::ostringstream unused;
  run_ranks(2, [&](RankContext& ctx) { run(ctx, o, unused); });
  const std::string one = checkpoint_path(o.checkpoints(), 1),
                    two = checkpoint_path(o.checkpoints(), 2);
  edit_metadata(two, [](auto& m) {
    m["epochs_done"] = m.at("epoch");  // a renamed key
    m.erase("epoch");
  });
  edit_metadata(one, [](auto& m) { m["optimizer_steps"] = "ten"; });
  const std::string before = read_bytes(two);
  o.resume = true;
  run_ranks(2, [&](RankContext& ctx) {
    try {
      run(ctx, o, unused);
      ADD_FAILURE() << "rank " << ctx.rank << " started fresh over unreadable checkpoints";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      if (ctx.rank == 0) {
        EXPECT_NE(what.find(two + ": the metadata has no 'epoch'"), std::string::npos) << what;
        EXPECT_NE(what.find("'optimizer_steps' is 'ten', not a whole number"), std::string::npos)
            << what;
        EXPECT_NE(what.find(one), std::string::npos) << what;
        EXPECT_NE(what.find("no sound checkpoint"), std::string::npos) << what;
      } else {
        EXPECT_NE(what.find("rank 0 found no sound checkpoint"), std::string::npos) << what;
      }
    }
  });
  EXPECT_EQ(read_bytes(two), before) << "the refused run wrote over the checkpoints";
}

TEST(CapstoneFaults, TemporaryFilesOfDeadWritersAreRemovedAndLiveOnesKept) {
  ScratchDir dir("tmp");
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // reaped: its pid now names no process
  const std::string dead = checkpoint_path(dir.path, 3) + ".tmp." + std::to_string(child);
  const std::string live = checkpoint_path(dir.path, 4) + ".tmp." + std::to_string(::getpid());
  const std::string other = dir.path + "/notes.tmp." + std::to_string(child);
  for (const std::string& p : {dead, live, other}) write_bytes(p, "torn");
  EXPECT_EQ(remove_stale_temporaries(dir.path), std::vector<std::string>{dead});
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live)) << "a file still being written was removed";
  EXPECT_TRUE(fs::exists(other)) << "a file that is not a checkpoint was removed";
}

TEST(CapstoneFaults, InitWeightsWithNaNAreRefusedNamingTheTensor) {
  ScratchDir dir("nan");
  Rng rng(7);
  std::shared_ptr<LayerStack> model = make_bn_mlp({6, 4, 3}, rng);
  NamedTensors state;
  for (const auto& [name, t] : model->state_dict()) state.emplace_back(name, t.clone());
  const std::string victim = state[2].first;
  std::vector<float> v = state[2].second.to_vector();
  v[v.size() / 2] = std::nanf("");
  state[2].second = Tensor::from_vector(state[2].second.shape(), v);
  const std::string path = dir.path + "/init.safetensors";
  save_safetensors(path, state);  // as a foreign tool would write it: no checksums
  try {
    load_checkpoint(path, *model, nullptr);
    ADD_FAILURE() << "weights holding NaN were loaded";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path + ": tensor '" + victim + "' holds nan at element " +
                        std::to_string(v.size() / 2)),
              std::string::npos)
        << what;
  }
}

// A learning rate far too large overflows the weights after one step: the run stops at the
// first non-finite loss, on every rank, naming the step and the rank.
TEST(CapstoneFaults, TheFirstNonFiniteLossStopsTrainingNamingStepAndRank) {
  ScratchDir dir("loss");
  CapstoneOptions o = tiny(dir.path, 2);
  o.save_checkpoints = false;
  o.train.lr = 1e38f;
  std::ostringstream unused;
  run_ranks(2, [&](RankContext& ctx) {
    try {
      run(ctx, o, unused);
      ADD_FAILURE() << "rank " << ctx.rank << " trained on through a non-finite loss";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_TRUE(what.find("the loss is nan at step ") != std::string::npos ||
                  what.find("the loss is inf at step ") != std::string::npos)
          << what;
      EXPECT_NE(what.find(") on rank " + std::to_string(ctx.rank) + ": training stopped"),
                std::string::npos)
          << what;
    }
  });
}

TEST(CapstoneFaults, DetectAnomalyNamesTheFirstNonFiniteGradient) {
  Rng rng(3);
  std::shared_ptr<LayerStack> model = make_bn_mlp({5, 4, 3}, rng);
  const auto params = model->named_parameters();
  ASSERT_GE(params.size(), 3u);
  for (const auto& [name, p] : params) p.set_grad(Tensor::zeros(p.data().shape()));
  const Variable& victim = params[2].second;
  std::vector<float> g(static_cast<size_t>(victim.data().numel()), 0.5f);
  g[1] = -INFINITY;
  victim.set_grad(Tensor::from_vector(victim.data().shape(), g));
  EXPECT_NO_THROW(check_finite_step(*model, 0.7f, /*detect_anomaly=*/false, 1, 0, 9));
  try {
    check_finite_step(*model, 0.7f, /*detect_anomaly=*/true, 1, 2, 9);
    ADD_FAILURE() << "a gradient holding inf passed --detect-anomaly";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the gradient of '" + params[2].first +
                                         "' holds inf at element 1 at step 9 (epoch 3) on rank 1"),
              std::string::npos)
        << e.what();
  }
}

// Ranks started by hand with another --lr or --seed are stopped at start-up, every rank
// naming the flag and which rank has which value.
TEST(CapstoneFaults, FlagsThatDifferAcrossRanksAreNamedAtStartUp) {
  ScratchDir dir("flags");
  std::ostringstream unused;
  run_ranks(3, [&](RankContext& ctx) {
    CapstoneOptions o = tiny(dir.path, 1);
    o.save_checkpoints = false;
    if (ctx.rank == 1) o.train.lr = 0.1f;
    if (ctx.rank == 2) o.train.seed = 5;
    try {
      run(ctx, o, unused);
      ADD_FAILURE() << "rank " << ctx.rank << " trained with flags unlike the others'";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("--lr differs across ranks: 0.05 on ranks 0, 2 vs 0.1 on rank 1"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("--seed differs across ranks: 0 on ranks 0, 1 vs 5 on rank 2"),
                std::string::npos)
          << what;
    }
  });
}

// A second run in a run directory that a live run holds is refused on every rank.
TEST(CapstoneFaults, ASecondRunInTheSameRunDirectoryIsRefused) {
  ScratchDir dir("lock");
  const RunDirLock held = lock_run_dir(dir.path);  // the first run
  const std::string holder = std::to_string(::getpid());
  CapstoneOptions o = tiny(dir.path, 1);
  std::ostringstream unused;
  run_ranks(2, [&](RankContext& ctx) {
    try {
      run(ctx, o, unused);
      ADD_FAILURE() << "rank " << ctx.rank << " ran in a directory in use";
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      if (ctx.rank == 0) {
        EXPECT_NE(what.find(dir.path + " is in use by another run (pid " + holder + ")"),
                  std::string::npos)
            << what;
      } else {
        EXPECT_NE(what.find("rank 0 could not lock the run directory"), std::string::npos) << what;
      }
    }
  });
  EXPECT_FALSE(fs::exists(o.checkpoints())) << "the refused run wrote checkpoints";
}

TEST(CapstoneFaults, EveryNumericFlagIsRangeChecked) {
  const std::vector<std::vector<std::string>> bad = {
      {"--lr", "nan"},           {"--lr", "-1"},
      {"--lr", "inf"},           {"--lr", "0"},
      {"--hidden", "0"},         {"--hidden", "16", "0"},
      {"--epochs", "0"},         {"--batch-size", "0"},
      {"--limit", "-5"},         {"--momentum", "2"},
      {"--weight-decay", "nan"}, {"--target", "1.5"},
      {"--crash-rank", "-2"},    {"--crash-at-step", "-7"}};
  for (const std::vector<std::string>& args : bad) {
    Flags flags;
    CapstoneOptions o;
    add_capstone_flags(flags, o);
    std::string what;
    EXPECT_EQ(flags.parse(args, what), Parsed::kUsageError)
        << args[0] << " " << args[1] << " was accepted";
    EXPECT_NE(what.find(args[0]), std::string::npos) << what;
    EXPECT_NE(what.find("must be"), std::string::npos) << what;
    EXPECT_LT(what.size(), 200u) << "an unreadable message: " << what;
  }
  Flags flags;
  CapstoneOptions o;
  add_capstone_flags(flags, o);
  std::string problem;
  ASSERT_EQ(flags.parse({"--lr", "0.1", "--hidden", "16", "8", "--momentum", "0.5"}, problem),
            Parsed::kOk)
      << problem;
  EXPECT_FLOAT_EQ(o.train.lr, 0.1f);
  EXPECT_EQ(o.train.hidden, (std::vector<int64_t>{16, 8}));
}

// --checkpoint-dir /proc/nope failed after the first epoch, naming neither flag nor rank.
TEST(CapstoneFaults, OutputPathsThatCannotBeWrittenAreUsageErrorsAtStartUp) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--checkpoint-dir", "/proc/nope"},
                                             {"--run-dir", "/proc/nope/run"},
                                             {"--checkpoint", "/nonexistent/d/x"}}) {
    Flags flags;
    CapstoneOptions o;
    add_capstone_flags(flags, o);
    std::string what;
    EXPECT_EQ(flags.parse(args, what), Parsed::kUsageError) << args[0] << " was accepted";
    EXPECT_NE(what.find(args[0] + ": cannot write " + args[1]), std::string::npos) << what;
  }
}

// The metadata recorded the default learning rate as "lr -1.000000".
TEST(CapstoneFaults, TheRunConfigRecordsTheLearningRateUsed) {
  CapstoneOptions o = tiny("unused", 1);
  EXPECT_NE(capstone_run_config(o, {784, 8, 10}, 2).at("optimizer").find("sgd lr 0.050000 "),
            std::string::npos);
  o.train.optimizer = "adam";
  EXPECT_NE(capstone_run_config(o, {784, 8, 10}, 2).at("optimizer").find("adam lr 0.001000 "),
            std::string::npos);
}

TEST(CapstoneFaults, CheckpointFlagWritesTheFinalStateDict) {
  ScratchDir dir("final");
  CapstoneOptions o = tiny(dir.path, 1);
  o.save_checkpoints = false;
  o.train.checkpoint = dir.path + "/final.safetensors";
  std::ostringstream unused;
  run_ranks(2, [&](RankContext& ctx) {
    const CapstoneResult r = run(ctx, o, unused);
    if (ctx.rank != 0) return;
    const SafetensorsFile f = load_safetensors(o.train.checkpoint);
    ASSERT_EQ(f.tensors.size(), r.final_state.size());
    for (size_t k = 0; k < f.tensors.size(); ++k) {
      EXPECT_EQ(f.tensors[k].first, r.final_state[k].first);
      EXPECT_EQ(f.tensors[k].second.to_vector(), r.final_state[k].second.to_vector());
    }
  });
}

}  // namespace
}  // namespace course::test
