// tensor_parallel_test.cpp: lesson 15: Megatron's f/g operators, the gather and scatter,
// the column- and row-parallel layers and the vocabulary-parallel loss against serial
// oracles (lesson 06's ops on the full tensors), with rank- and index-dependent inputs, at
// 1 to 4 ranks (the loss also on logits large enough for exp to overflow); a 4 MiB
// activation; the model (once the pieces pass the driver's self-check) against one process
// after 20 SGD steps at T = 1, 2, 4 and (D, T) = (2, 2) and after Adam steps at (2, 2), tcp
// and gloo; the full state dict; the mesh and the usage errors.
//
//   ./build/solutions/test_15
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../collectives/group_factory.h"
#include "ddp_training.h"
#include "device_mesh.h"
#include "error.h"
#include "harness.h"
#include "ops.h"
#include "parallel_linear.h"
#include "safetensors.h"
#include "tensor_ops.h"
#include "tp_equivalence.h"
#include "tp_model.h"
#include "tp_ops.h"
#include "tp_self_check.h"
#include "tp_training.h"
#include "tp_training_flags.h"
#include "vocab_parallel_loss.h"

namespace course::test {
namespace {

// Rank- and index-dependent values in eighths: sums over a few ranks are exact.
Tensor pattern(int64_t rows, int64_t cols, int salt) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] =
        static_cast<float>(static_cast<int>((i * 13 + static_cast<size_t>(salt) * 7) % 29) - 14) /
        8.0f;
  }
  return Tensor::from_vector({rows, cols}, v);
}

void expect_close(const Tensor& got, const Tensor& want, float tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": no tensor";
  ASSERT_EQ(got.numel(), want.numel()) << what;
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::fabs(w[i]))) << what << ", element " << i;
  }
}

Tensor sum_over_ranks(int64_t rows, int64_t cols, int world, int salt) {
  Tensor total = pattern(rows, cols, salt);
  for (int r = 1; r < world; ++r) total = add(total, pattern(rows, cols, salt + r));
  return total;
}

// ---- f and g, gather and scatter -----------------------------------------------------

TEST(TpOps, CopyToTpIsIdentityForwardAndAllReduceBackward) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      Variable x(pattern(5, 6, 99), true);
      Variable y = copy_to_tp(x, *tp);
      expect_close(y.data(), x.data(), 0, "forward");
      y.backward(pattern(5, 6, ctx.rank));  // this rank's part of dL/dx
      expect_close(x.grad(), sum_over_ranks(5, 6, ctx.world, 0), 0, "backward: the sum");
    });
  }
}

TEST(TpOps, ReduceFromTpIsAllReduceForwardAndIdentityBackward) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      Variable x(pattern(4, 7, ctx.rank), true);
      Variable y = reduce_from_tp(x, *tp);
      expect_close(y.data(), sum_over_ranks(4, 7, ctx.world, 0), 0, "forward: the sum");
      y.backward(pattern(4, 7, 50));
      expect_close(x.grad(), pattern(4, 7, 50), 0, "backward: the seed unchanged");
      expect_close(x.data(), pattern(4, 7, ctx.rank), 0, "the input is not changed in place");
    });
  }
}

TEST(TpOps, GatherAndScatterAlongTheLastDimensionAreEachOthersBackward) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      const int T = ctx.world, t = ctx.rank;
      const int64_t B = 3, n = 5;
      Variable x(pattern(B, n, t), true);
      Variable y = gather_from_tp(x, *tp);
      ASSERT_EQ(y.size(1), n * T);
      for (int r = 0; r < T; ++r) {
        expect_close(column_slice(y.data(), r * n, n), pattern(B, n, r), 0,
                     "gather: the columns of rank " + std::to_string(r));
      }
      {  // The node alone: a whole [B, n*T] gradient would stop autograd before it is named.
        GatherFromTpBackward node;
        node.tp = tp.get();
        const std::vector<Tensor> g = node.apply(pattern(B, n * T, 77));
        ASSERT_EQ(g.size(), 1u);
        ASSERT_TRUE(g[0].defined());
        ASSERT_EQ(shape_str(g[0].shape()), shape_str({B, n}))
            << "GatherFromTpBackward::apply must return this rank's slice of g, not the whole "
               "gradient";
      }
      y.backward(pattern(B, n * T, 77));
      expect_close(x.grad(), column_slice(pattern(B, n * T, 77), t * n, n), 0, "gather backward");

      Variable full(pattern(B, n * T, 33), true);
      Variable mine = scatter_to_tp(full, *tp);
      expect_close(mine.data(), column_slice(full.data(), t * n, n), 0, "scatter");
      mine.backward(pattern(B, n, 10 + t));
      for (int r = 0; r < T; ++r) {
        expect_close(column_slice(full.grad(), r * n, n), pattern(B, n, 10 + r), 0,
                     "scatter backward: the columns of rank " + std::to_string(r));
      }
    });
  }
}

TEST(TpOps, FourMiBActivationsOnTcpAndGloo) {
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(4, [&backend](RankContext& ctx) {
      auto tp = make_group(backend, ctx);
      const int64_t B = 512, H = 2048;  // [B, H] floats: 4 MiB
      Variable x(pattern(B, H, ctx.rank), true);
      Variable y = reduce_from_tp(copy_to_tp(x, *tp), *tp);
      expect_close(y.data(), sum_over_ranks(B, H, ctx.world, 0), 0, "forward");
      y.backward(pattern(B, H, 40 + ctx.rank));
      expect_close(x.grad(), sum_over_ranks(B, H, ctx.world, 40), 0, "backward");
    });
  }
}

// ---- The parallel layers ----------------------------------------------------------------

TEST(ParallelLinear, ColumnParallelMatchesTheFullLayerForwardAndBackward) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      const int T = ctx.world, t = ctx.rank;
      const int64_t B = 4, in = 6, out = 2 * T, o = 2;
      for (bool gather : {false, true}) {
        SCOPED_TRACE(gather ? "gather_output" : "sharded output");
        const Tensor w = pattern(out, in, 1), b = pattern(1, out, 2).reshape({out});
        ColumnParallelLinear layer(w, b, *tp, gather);
        Variable x(pattern(B, in, 3), true);
        Variable y = layer.forward(x);
        Variable xs(pattern(B, in, 3), true), ws(w, true), bs(b, true);
        Variable ys = linear(xs, ws, bs);
        expect_close(y.data(), gather ? ys.data() : column_slice(ys.data(), t * o, o), 1e-5f,
                     "output (x enters by copy_to_tp, f, the identity forward: f and g swapped "
                     "sum x over the ranks)");
        const Tensor seed = pattern(B, out, 4);
        y.backward(gather ? seed : column_slice(seed, t * o, o));
        ys.backward(seed);
        expect_close(layer.weight().grad(), ws.grad().rows(t * o, o), 1e-5f, "weight grad");
        expect_close(layer.bias().grad(), bs.grad().rows(t * o, o), 1e-5f, "bias grad");
        expect_close(x.grad(), xs.grad(), 1e-5f, "input grad: f's all-reduce");
        expect_close(layer.full_weight(), w, 0, "full_weight");
        expect_close(layer.full_bias(), b, 0, "full_bias");
      }
    });
  }
}

TEST(ParallelLinear, RowParallelMatchesTheFullLayerAndAddsItsBiasOnce) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      const int T = ctx.world, t = ctx.rank;
      const int64_t B = 4, in = 3 * T, i = 3, out = 5;
      for (bool parallel : {true, false}) {
        SCOPED_TRACE(parallel ? "input parallel" : "input scattered");
        const Tensor w = pattern(out, in, 5), b = pattern(1, out, 6).reshape({out});
        RowParallelLinear layer(w, b, *tp, parallel);
        const Tensor full_x = pattern(B, in, 7);
        Variable x(parallel ? column_slice(full_x, t * i, i) : full_x, true);
        Variable y = layer.forward(x);
        Variable xs(full_x, true), ws(w, true), bs(b, true);
        Variable ys = linear(xs, ws, bs);
        expect_close(
            y.data(), ys.data(), 1e-5f,
            "output (a bias added T times shows here, and partial sums that reduce_from_tp, g, "
            "did not add up: f and g swapped)");
        const Tensor seed = pattern(B, out, 8);
        y.backward(seed);
        ys.backward(seed);
        expect_close(layer.weight().grad(), column_slice(ws.grad(), t * i, i), 1e-5f,
                     "weight grad");
        expect_close(layer.bias().grad(), bs.grad(), 1e-5f, "bias grad");
        expect_close(x.grad(), parallel ? column_slice(xs.grad(), t * i, i) : xs.grad(), 1e-5f,
                     "input grad");
        expect_close(layer.full_weight(), w, 0, "full_weight");
      }
    });
  }
}

// ---- The vocabulary-parallel loss ---------------------------------------------------------

TEST(VocabParallelLoss, EqualsCrossEntropyWithTenClassesPaddedAtThreeAndFourRanks) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      const int T = ctx.world, t = ctx.rank;
      const int64_t B = 7, C = 10, Cp = padded_classes(C, T), n = Cp / T;
      ASSERT_EQ(Cp % T, 0);
      ASSERT_GE(Cp, C);
      ASSERT_LT(Cp, C + T);
      const Tensor full = pattern(B, C, 11);
      std::vector<float> targets(B);
      for (int64_t j = 0; j < B; ++j) targets[j] = static_cast<float>((j * 3 + 2) % C);
      targets[0] = C - 1;  // the last real class, next to the padding
      const Tensor y = Tensor::from_vector({B}, targets);
      // Padded columns hold values larger than any real logit: masking must ignore them.
      Tensor mine = Tensor::full({B, n}, 30.0f + t);
      for (int64_t j = 0; j < B; ++j) {
        for (int64_t c = 0; c < n && t * n + c < C; ++c) {
          mine.data()[j * n + c] = full.data()[j * C + t * n + c];
        }
      }
      Variable z(mine, true);
      Variable loss = vocab_parallel_cross_entropy(z, y, C, *tp);
      Variable zs(full, true);
      Variable want = cross_entropy(zs, y);
      ASSERT_NEAR(loss.item(), want.item(), 1e-5f);
      loss.backward(Tensor::scalar(2.5f));  // a seed other than 1
      want.backward(Tensor::scalar(2.5f));
      for (int64_t j = 0; j < B; ++j) {
        for (int64_t c = 0; c < n; ++c) {
          const int64_t cls = t * n + c;
          const float expected = cls < C ? zs.grad().data()[j * C + cls] : 0.0f;
          ASSERT_NEAR(z.grad().data()[j * n + c], expected, 1e-6f)
              << "example " << j << ", class " << cls << (cls >= C ? " (padding)" : "");
        }
      }
      // A target outside the classes is an error naming the example.
      EXPECT_THROW(vocab_parallel_cross_entropy(
                       z, Tensor::from_vector({B}, std::vector<float>(B, 10.0f)), C, *tp),
                   ConfigError);
    });
  }
}

// Logits of 100 and more (exp overflows float past 88), each rank's columns 30 above or
// below the next's, the largest on another rank in each row: only a loss that subtracts
// the row maximum, and the global one (the MAX all-reduce), gets them right.
TEST(VocabParallelLoss, LargeLogitsFarApartAcrossRanksNeedTheGlobalRowMaximum) {
  for (int world : {1, 2, 3, 4}) {
    SCOPED_TRACE(world);
    run_ranks(world, [](RankContext& ctx) {
      auto tp = make_group("tcp", ctx);
      const int T = ctx.world, t = ctx.rank;
      const int64_t B = 5, C = 10, n = padded_classes(C, T) / T;
      Tensor full = pattern(B, C, 12);
      for (int64_t j = 0; j < B; ++j) {
        for (int64_t c = 0; c < C; ++c) {
          full.data()[j * C + c] += 100.0f + 30.0f * static_cast<float>((c / n + j) % T);
        }
      }
      std::vector<float> targets(B);
      for (int64_t j = 0; j < B; ++j) targets[j] = static_cast<float>((j * 3 + 1) % C);
      const Tensor y = Tensor::from_vector({B}, targets);
      Tensor mine = Tensor::full({B, n}, 0.0f);
      for (int64_t j = 0; j < B; ++j) {
        for (int64_t c = 0; c < n && t * n + c < C; ++c) {
          mine.data()[j * n + c] = full.data()[j * C + t * n + c];
        }
      }
      Variable z(mine, true);
      Variable loss = vocab_parallel_cross_entropy(z, y, C, *tp);
      Variable zs(full, true);
      Variable want = cross_entropy(zs, y);
      ASSERT_TRUE(std::isfinite(loss.item()))
          << "the loss is " << loss.item() << ": exp(z) overflows: subtract the row maximum";
      ASSERT_NEAR(loss.item(), want.item(), 1e-4f * (1 + std::fabs(want.item())))
          << "the maximum must be the global one: the MAX all-reduce over the group";
      loss.backward();
      want.backward();
      for (int64_t j = 0; j < B; ++j) {
        for (int64_t c = 0; c < n; ++c) {
          const int64_t cls = t * n + c;
          const float expected = cls < C ? zs.grad().data()[j * C + cls] : 0.0f;
          ASSERT_NEAR(z.grad().data()[j * n + c], expected, 1e-6f)
              << "example " << j << ", class " << cls;
        }
      }
    });
  }
}

// ---- The model against one process ----------------------------------------------------------

// A small synthetic problem: 24 inputs, H = 8, 2 blocks, 10 classes, `steps` global
// batches of 12 examples with index-dependent inputs and targets.
std::vector<Batch> synthetic_batches(int steps, int64_t batch) {
  std::vector<Batch> out;
  for (int s = 0; s < steps; ++s) {
    Tensor x = pattern(batch, 24, 100 + s);
    std::vector<float> y(static_cast<size_t>(batch));
    for (int64_t j = 0; j < batch; ++j) y[j] = static_cast<float>((j * 7 + s * 3) % 10);
    out.push_back({x, Tensor::from_vector({batch}, y)});
  }
  return out;
}

// The model's tests start where ./lesson15 starts, with the self-check of the pieces the
// model is made of (tp_self_check.h): a piece that is wrong fails the model too, named by
// its cause, even where the model's small logits would not show it (an unstable loss).
bool pieces_pass(int world) {
  run_ranks(world, [](RankContext& ctx) {
    auto tp = make_group("tcp", ctx);
    ASSERT_EQ(run_lesson15_self_check(*tp), "") << "the model's pieces";
  });
  return !::testing::Test::HasFailure();
}

// (D, T) on `backend`: the largest parameter difference after `steps` steps of `optimizer`.
double grid_difference(RankContext& ctx, const std::string& backend, int tp,
                       const std::string& optimizer, int steps) {
  auto world = make_group(backend, ctx);
  Subgroups subgroups = make_subgroups(backend, ctx);
  const DeviceMesh mesh = init_device_mesh(subgroups, tp_mesh_dims(world->size(), tp));
  TpTrainingOptions o;
  o.optimizer = optimizer;
  o.lr = optimizer == "adam" ? 1e-3f : 0.05f;
  const ModelShape shape{.inputs = 24, .hidden = 8, .blocks = 2, .classes = 10};
  Rng rng(7);
  const NamedTensors init = make_serial_model(shape, rng)->state_dict();
  return tp_equivalence_difference(o, shape, init, synthetic_batches(steps, 12), mesh, *world);
}

TEST(TpModel, TwentySgdStepsEqualOneProcessAtOneTwoFourAndTwoByTwo) {
  if (!pieces_pass(4)) return;
  for (const std::string& backend : available_backends()) {
    // (world, T): T = 1 alone, then 2 and 4 on as many ranks, then the 2D grids of 4 ranks:
    // (D, T) = (2, 2), and (4, 1), which is lesson 10's DDP over every rank.
    const std::vector<std::pair<int, int>> grids = {{1, 1}, {2, 2}, {4, 4}, {4, 2}, {4, 1}};
    for (const auto& [world, tp] : grids) {
      SCOPED_TRACE(backend + ", (D, T) = (" + std::to_string(world / tp) + ", " +
                   std::to_string(tp) + ")");
      run_ranks(world, [tp = tp, &backend](RankContext& ctx) {
        const double difference = grid_difference(ctx, backend, tp, "sgd", 20);
        EXPECT_LE(difference, 1e-5) << "after 20 SGD steps";
      });
    }
  }
}

TEST(TpModel, AdamStepsEqualOneProcessOnTcpAndGloo) {
  if (!pieces_pass(4)) return;
  for (const std::string& backend : available_backends()) {
    SCOPED_TRACE(backend);
    run_ranks(4, [&backend](RankContext& ctx) {
      EXPECT_LE(grid_difference(ctx, backend, 2, "adam", 5), 0.25 * 1e-3) << "(D, T) = (2, 2)";
    });
  }
}

TEST(TpModel, ShardsAreSlicesOfTheFullInitAndTheFullStateDictRoundTrips) {
  if (!pieces_pass(4)) return;
  run_ranks(4, [](RankContext& ctx) {
    auto tp = make_group("tcp", ctx);
    const ModelShape shape{.inputs = 24, .hidden = 8, .blocks = 2, .classes = 10};
    Rng rng(3);
    auto serial = make_serial_model(shape, rng);
    TensorParallelMlp model(serial->state_dict(), shape, *tp);
    // The shards' names are the full model's; their sizes 1/T of it plus the replicated.
    EXPECT_EQ(model.parameter_count(), shape.parameters_per_rank(4));
    EXPECT_EQ(serial->parameter_count(), shape.parameters());
    const NamedTensors full = model.full_state_dict();
    EXPECT_EQ(max_abs_difference(full, serial->state_dict()), 0.0);
    // The logits of the two models agree (the head's padding dropped).
    const Tensor x = pattern(5, 24, 9);
    expect_close(model.full_logits(x), serial->forward(Variable(x)).data(), 1e-5f, "logits");
    // Written and read back as a file: what --checkpoint writes, --init and lesson 07 read.
    const std::string path = "tp_state_" + std::to_string(ctx.rank) + ".safetensors";
    save_safetensors(path, full);
    Rng other(99);
    auto loaded = make_serial_model(shape, other);
    loaded->load_state_dict(load_safetensors(path).tensors);
    std::remove(path.c_str());
    EXPECT_EQ(max_abs_difference(loaded->state_dict(), serial->state_dict()), 0.0);
  });
}

// ---- The mesh and the usage errors --------------------------------------------------------

TEST(TpMesh, RanksAreLaidOutTpInnerAndBadSizesNameBothNumbers) {
  const MeshLayout g(tp_mesh_dims(8, 2));
  EXPECT_EQ(g.size("tp"), 2);
  EXPECT_EQ(g.size("dp"), 4);
  EXPECT_EQ(g.coordinate(5, "tp"), 1);
  EXPECT_EQ(g.coordinate(5, "dp"), 2);
  EXPECT_EQ(MeshLayout(tp_mesh_dims(4, 0)).size("dp"), 1) << "D = 1: a dimension of size 1";
  const std::string not_dividing = tp_usage_problem(4, 3, 128);
  EXPECT_NE(not_dividing.find("--tp 3"), std::string::npos) << not_dividing;
  EXPECT_NE(not_dividing.find('4'), std::string::npos) << not_dividing;
  const std::string hidden = tp_usage_problem(8, 8, 9);  // fc1: 36 features
  EXPECT_NE(hidden.find("--hidden 9"), std::string::npos) << hidden;
  EXPECT_NE(hidden.find("--tp 8"), std::string::npos) << hidden;
  EXPECT_EQ(tp_usage_problem(4, 0, 128), "");
  EXPECT_THROW(tp_mesh_dims(4, 3), ConfigError);
}

}  // namespace
}  // namespace course::test
