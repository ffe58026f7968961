// naive_ddp_test.cpp: lesson 09, part 2: NaiveDdp on real ranks (forked processes, tcp and
// Gloo). The heart: N ranks with batch B train exactly like one process with batch N*B,
// step for step, for both variants and both optimizers. Around it: construction makes
// every rank equal to rank 0 (parameters and buffers), a different model or a missing
// gradient is an error on every rank, and both variants average rank- and
// index-dependent gradients, a 32 MiB one included.
//
//   ./build/solutions/test_09 --gtest_filter='NaiveDdp*'
#include "naive_ddp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "../collectives/group_factory.h"
#include "../support/blobs.h"
#include "checkpoint.h"
#include "ddp_training.h"
#include "distributed_sampler.h"
#include "error.h"
#include "linear.h"
#include "model_check.h"
#include "ops.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course {
namespace {

using test::RankContext;
using test::run_ranks;

using test::blobs;

// The serial oracle's batch at step s, from torch's definition and lesson 07's order
// alone (not from the sampler under test): positions [s*N*B, (s+1)*N*B) of the order
// padded from its front.
Batch serial_batch(const Dataset& d, int world, int64_t b, uint64_t seed, int64_t step) {
  const std::vector<int64_t> order = RandomSampler(d.size(), seed).indices(0);
  const int64_t total = (d.size() + world - 1) / world * world;
  std::vector<int64_t> ids;
  for (int64_t p = step * world * b; p < std::min(total, (step + 1) * world * b); ++p) {
    ids.push_back(order[static_cast<size_t>(p) % order.size()]);
  }
  return Batch{gather_rows(d.inputs, ids), gather_rows(d.targets, ids)};
}

NamedTensors cloned(const NamedTensors& state) {
  NamedTensors out;
  for (const auto& [name, t] : state) out.emplace_back(name, t.clone());
  return out;
}

struct EquivalenceCase {
  std::string backend;
  GradSync variant;
  int world;
};

void PrintTo(const EquivalenceCase& c, std::ostream* os) {
  *os << c.backend << ", " << grad_sync_name(c.variant) << ", " << c.world << " rank(s)";
}

std::string case_name(const testing::TestParamInfo<EquivalenceCase>& info) {
  return info.param.backend + "_" + (info.param.variant == GradSync::flat ? "flat" : "perparam") +
         "_N" + std::to_string(info.param.world);
}

class NaiveDdpEquivalence : public testing::TestWithParam<EquivalenceCase> {};

// N ranks x batch B == one process x batch N*B, after every one of 4 steps, SGD with
// momentum and Adam. The data set's length (4NB - 3) does not divide by N for N > 1, so
// the last step contains padding; every rank starts from its own random parameters.
TEST_P(NaiveDdpEquivalence, NRanksWithBatchBTrainLikeOneProcessWithBatchNB) {
  const EquivalenceCase c = GetParam();
  constexpr int64_t kBatch = 5;
  constexpr int kSteps = 4;
  run_ranks(c.world, [&](RankContext& ctx) {
    auto pg = test::make_group(c.backend, ctx);
    const Dataset data = blobs(kSteps * c.world * kBatch - 3);
    for (const std::string optimizer : {"sgd", "adam"}) {
      DdpTrainingOptions o;
      o.optimizer = optimizer;
      o.lr = optimizer == "sgd" ? 0.1f : 0.01f;
      Rng rng(100 + static_cast<uint64_t>(ctx.rank));
      auto model = make_mlp({8, 16, 3}, rng);
      NaiveDdp ddp(*model, *pg, c.variant);
      auto serial_rng = Rng(999);
      auto serial = make_mlp({8, 16, 3}, serial_rng);
      serial->load_state_dict(cloned(model->state_dict()));
      auto opt = make_ddp_optimizer(o, model->parameters());
      auto serial_opt = make_ddp_optimizer(o, serial->parameters());
      DataLoader loader(
          data, kBatch,
          std::make_shared<DistributedSampler>(data.size(), c.world, ctx.rank, true, 3));
      loader.start_epoch(0);
      for (int s = 0; s < kSteps; ++s) {
        const std::optional<Batch> mine = loader.next();
        ASSERT_TRUE(mine.has_value()) << "step " << s;
        ddp_train_step(*model, *opt, ddp, *mine);
        train_step(*serial, *serial_opt, serial_batch(data, c.world, kBatch, 3, s));
        const double diff = max_abs_difference(model->state_dict(), serial->state_dict());
        ASSERT_LE(diff, equivalence_tolerance(o))
            << optimizer << ", step " << s + 1 << ": DDP differs from one process with batch "
            << c.world * kBatch;
      }
      EXPECT_FALSE(loader.next().has_value()) << "every rank has exactly 4 batches";
    }
  });
}

std::vector<EquivalenceCase> equivalence_cases() {
  std::vector<EquivalenceCase> cases;
  for (const std::string& b : available_backends()) {
    for (GradSync v : {GradSync::per_param, GradSync::flat}) {
      for (int n = 1; n <= 4; ++n) cases.push_back({b, v, n});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Cases, NaiveDdpEquivalence, testing::ValuesIn(equivalence_cases()),
                         case_name);

// Gradients set by hand: rank r's element i is (r + 1) * ((i % 7) - 3) / 4 + r / 8; the
// mean over N ranks has a closed form.
float rank_grad(int rank, size_t i) {
  return static_cast<float>(rank + 1) * static_cast<float>(static_cast<int>(i % 7) - 3) / 4.0f +
         static_cast<float>(rank) / 8.0f;
}
float mean_grad(int world, size_t i) {
  double sum = 0;
  for (int r = 0; r < world; ++r) sum += rank_grad(r, i);
  return static_cast<float>(sum / world);
}

void set_rank_grads(const Module& model, int rank) {
  size_t offset = 0;  // index over all parameters, so every parameter's values differ
  for (const Variable& p : model.parameters()) {
    std::vector<float> g(static_cast<size_t>(p.numel()));
    for (size_t i = 0; i < g.size(); ++i) g[i] = rank_grad(rank, offset + i);
    offset += g.size();
    p.set_grad(Tensor::from_vector(p.shape(), g));
  }
}

void expect_mean_grads(const Module& model, int world, const std::string& what) {
  size_t offset = 0, wrong = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    const std::vector<float> g = p.grad().to_vector();
    for (size_t i = 0; i < g.size(); ++i) {
      const float want = mean_grad(world, offset + i);
      if (std::fabs(g[i] - want) > 1e-6f * (1 + std::fabs(want)) && wrong++ < 3) {
        ADD_FAILURE() << what << ": " << name << "[" << i << "] is " << g[i] << ", want " << want;
      }
    }
    offset += g.size();
  }
  EXPECT_EQ(wrong, 0u) << what;
}

class NaiveDdpBackends : public testing::TestWithParam<std::string> {};

TEST_P(NaiveDdpBackends, BothVariantsAverageRankDependentGradients) {
  for (int world : {2, 3}) {
    run_ranks(world, [&](RankContext& ctx) {
      auto pg = test::make_group(GetParam(), ctx);
      Rng rng(5);
      auto model = make_mlp({6, 5, 4, 3}, rng);
      NaiveDdp ddp(*model, *pg);
      set_rank_grads(*model, ctx.rank);
      ddp.sync_gradients_per_param();
      expect_mean_grads(*model, world, "per-param");
      set_rank_grads(*model, ctx.rank);
      ddp.sync_gradients_flat();
      expect_mean_grads(*model, world, "flat");
      // sync_gradients dispatches on the variant.
      NaiveDdp flat(*model, *pg, GradSync::flat);
      set_rank_grads(*model, ctx.rank);
      flat.sync_gradients();
      expect_mean_grads(*model, world, "sync_gradients (flat)");
      EXPECT_EQ(ddp.messages_per_step(), 1 + 6);
      EXPECT_EQ(flat.messages_per_step(), 1 + 1);
    });
  }
}

// A model of 8.4 M parameters: the flat buffer is 32 MiB, above any socket buffer, so a
// collective that sends before it receives deadlocks; the short limit makes that a
// failure in seconds that names what each rank was blocked in.
TEST_P(NaiveDdpBackends, LargeGradientsOf32MiBAverageWithinSeconds) {
  test::RanksOptions options;
  options.timeout = std::chrono::seconds(30);
  run_ranks(
      2,
      [&](RankContext& ctx) {
        auto pg = test::make_group(GetParam(), ctx);
        Rng rng(6);
        auto model = make_mlp({2048, 4096, 2}, rng);
        ASSERT_GE(model->parameter_count() * 4, 32ll << 20);
        NaiveDdp ddp(*model, *pg, GradSync::flat);
        set_rank_grads(*model, ctx.rank);
        ddp.sync_gradients();
        expect_mean_grads(*model, 2, "flat, 32 MiB");
        NaiveDdp per_param(*model, *pg, GradSync::per_param);
        set_rank_grads(*model, ctx.rank);
        per_param.sync_gradients();
        expect_mean_grads(*model, 2, "per-param, a 32 MiB weight");
      },
      options);
}

// A model with a buffer (BatchNorm's running statistics are lesson 11's).
class WithBuffer : public Module {
 public:
  WithBuffer(Rng& rng, float buffer_value) {
    fc_ = register_module("fc", std::make_shared<Linear>(4, 3, rng));
    register_buffer("running", Tensor::full({3}, buffer_value));
  }
  Variable forward(const Variable& x) override { return fc_->forward(x); }
  std::string describe() const override { return "WithBuffer"; }

 private:
  std::shared_ptr<Linear> fc_;
};

TEST_P(NaiveDdpBackends, ConstructionMakesEveryRankEqualToRankZero) {
  run_ranks(3, [&](RankContext& ctx) {
    auto pg = test::make_group(GetParam(), ctx);
    Rng rng(10 + static_cast<uint64_t>(ctx.rank));  // different on every rank
    WithBuffer model(rng, 1.5f + static_cast<float>(ctx.rank));
    Rng rank0_rng(10);
    WithBuffer rank0(rank0_rng, 1.5f);  // what rank 0 built
    if (ctx.rank != 0) {
      ASSERT_GT(max_abs_difference(model.state_dict(), rank0.state_dict()), 0.01);
    }
    NaiveDdp ddp(model, *pg);
    EXPECT_EQ(max_abs_difference(model.state_dict(), rank0.state_dict()), 0.0)
        << "parameters and buffers must be rank 0's, bit for bit";
    EXPECT_EQ(check_identical_across_ranks(model, *pg), "");
  });
}

TEST_P(NaiveDdpBackends, ADifferentModelIsAnErrorOnEveryRankNamingRankAndParameter) {
  run_ranks(3, [&](RankContext& ctx) {
    auto pg = test::make_group(GetParam(), ctx);
    Rng rng(1);
    // Rank 2's hidden layer is wider: "0.weight" is [7, 4] there, [5, 4] elsewhere.
    auto model = make_mlp({4, ctx.rank == 2 ? 7 : 5, 3}, rng);
    try {
      NaiveDdp ddp(*model, *pg);
      ADD_FAILURE() << "no error for a different model";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("rank 2"), std::string::npos) << m;
      EXPECT_NE(m.find("\"0.weight\" [7, 4]"), std::string::npos) << m;
      EXPECT_NE(m.find("\"0.weight\" [5, 4]"), std::string::npos) << m;
    }
    // A different number of parameters (rank 1 has an extra layer).
    std::vector<int64_t> sizes{4, 5, 3};
    if (ctx.rank == 1) sizes = {4, 5, 5, 3};
    auto other = make_mlp(sizes, rng);
    try {
      NaiveDdp ddp(*other, *pg, GradSync::flat);
      ADD_FAILURE() << "no error for a different number of parameters";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("rank 1"), std::string::npos) << m;
    }
    // Same shapes, different names: rank 1's "fc.weight" against "0.weight".
    Rng named_rng(4);
    std::shared_ptr<Module> named;
    if (ctx.rank == 1) {
      named = std::make_shared<WithBuffer>(named_rng, 0.0f);
    } else {
      named = make_mlp({4, 3}, named_rng);
    }
    try {
      NaiveDdp ddp(*named, *pg);
      ADD_FAILURE() << "no error for different parameter names";
    } catch (const ConfigError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("\"fc.weight\" [3, 4] on rank 1"), std::string::npos) << m;
      EXPECT_NE(m.find("\"0.weight\" [3, 4] on rank 0"), std::string::npos) << m;
    }
  });
}

TEST_P(NaiveDdpBackends, AMissingGradientIsAnErrorOnEveryRankNotAHang) {
  run_ranks(3, [&](RankContext& ctx) {
    auto pg = test::make_group(GetParam(), ctx);
    Rng rng(2);
    auto model = make_mlp({4, 5, 3}, rng);
    for (GradSync variant : {GradSync::per_param, GradSync::flat}) {
      NaiveDdp ddp(*model, *pg, variant);
      set_rank_grads(*model, ctx.rank);
      // Rank 1's "2.bias" took no part in its loss.
      if (ctx.rank == 1) model->named_parameters()[3].second.zero_grad(/*set_to_none=*/true);
      try {
        ddp.sync_gradients();
        ADD_FAILURE() << "no error for a missing gradient";
      } catch (const ConfigError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("\"2.bias\""), std::string::npos) << m;
        EXPECT_NE(m.find("rank(s) 1"), std::string::npos) << m;
      }
    }
  });
}

// --init and --checkpoint: what rank 0 saved is what every rank starts from next time.
TEST_P(NaiveDdpBackends, ACheckpointFromRankZeroIsEveryRanksStartingPoint) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("test09-" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = test::make_group(GetParam(), ctx);
    DdpTrainingOptions o;
    o.seed = 21;
    const std::vector<int64_t> sizes{8, 6, 3};
    // Train a little, then rank 0 saves after a barrier.
    auto model = make_ddp_model(o, sizes, ctx.rank);
    NaiveDdp ddp(*model, *pg);
    auto opt = make_ddp_optimizer(o, model->parameters());
    const Dataset data = blobs(40);
    for (int s = 0; s < 3; ++s) {
      ddp_train_step(*model, *opt, ddp, serial_batch(data, 1, 4 + ctx.rank, 0, s));
    }
    pg->barrier();
    if (ctx.rank == 0) save_checkpoint(path, *model, nullptr);
    pg->barrier();
    // Start again: only rank 0 reads the file; the broadcast brings everyone along.
    o.init = path;
    o.seed = 77;  // fresh random parameters, different on every rank
    auto again = make_ddp_model(o, sizes, ctx.rank);
    NaiveDdp ddp_again(*again, *pg);
    EXPECT_EQ(max_abs_difference(again->state_dict(), model->state_dict()), 0.0);
  });
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Backends, NaiveDdpBackends, testing::ValuesIn(available_backends()));

// Given code: the bit-for-bit comparison of the verdict catches one rank's difference and
// names the rank and its first differing element, the same text on every rank.
TEST(NaiveDdpChecks, IdenticalAcrossRanksNamesTheRankThatDiffers) {
  run_ranks(3, [](RankContext& ctx) {
    auto pg = test::make_group("tcp", ctx);
    Rng rng(3);
    auto model = make_mlp({4, 3}, rng);
    EXPECT_EQ(check_identical_across_ranks(*model, *pg), "");
    if (ctx.rank >= 1) model->parameters()[1].data().data()[2] += 1e-3f;
    const std::string problem = check_identical_across_ranks(*model, *pg);
    EXPECT_NE(problem.find("rank 1's"), std::string::npos) << problem;
    EXPECT_NE(problem.find("0.bias[2]"), std::string::npos) << problem;
  });
}

// Given code: the flags ranks compare name the learning rate used, so a rank given
// `--lr 0.05` agrees with one left at SGD's default (0.05), and Adam's default is its own.
TEST(NaiveDdpChecks, TheFlagsComparedAcrossRanksHoldTheLearningRateUsed) {
  DdpTrainingOptions by_default, explicit_rate, adam;
  explicit_rate.lr = 0.05f;
  adam.optimizer = "adam";
  EXPECT_EQ(ddp_training_flag_values(by_default), ddp_training_flag_values(explicit_rate));
  EXPECT_EQ(ddp_training_flag_values(by_default).at("--lr"), "0.05");
  EXPECT_EQ(ddp_training_flag_values(adam).at("--lr"), "0.001");
  explicit_rate.lr = 0.1f;
  EXPECT_EQ(ddp_training_flag_values(explicit_rate).at("--lr"), "0.1");
}

}  // namespace
}  // namespace course
