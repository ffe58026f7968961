// gpt_test.cpp: lesson 17, the given GPT (gpt.h) and the optimizer pieces it trains with
// (lesson 07's adamw.h, grad_clip.h, lr_schedule.h): the parameter count formula, the
// names, shapes and initialisation, forward shapes and errors, naive and tiled models
// agreeing, a tiny overfit, AdamW against a hand-computed step, clipping, the schedule and
// a checkpoint round trip with its vocabulary.
//
//   ./build/solutions/test_17 --gtest_filter='Gpt*:AdamW*:ClipGradNorm*:CosineSchedule*'
#include "gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "adamw.h"
#include "checkpoint.h"
#include "error.h"
#include "grad_clip.h"
#include "gradcheck.h"
#include "lr_schedule.h"
#include "ops.h"
#include "tensor_ops.h"
#include "text_corpus.h"

namespace course {
namespace {

GptConfig small_config(AttentionKind kind = AttentionKind::tiled) {
  GptConfig c;
  c.vocab = 11;
  c.context = 8;
  c.layers = 2;
  c.heads = 2;
  c.hidden = 8;
  c.attention = kind;
  c.tiles = {3, 3};  // blocks that do not divide S
  return c;
}

// [B, S] ids that depend on row and position.
Tensor ids_for(int64_t batch, int64_t seq, int64_t vocab) {
  Tensor t = Tensor::empty({batch, seq});
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = static_cast<float>((i * 5 + i / seq) % vocab);
  return t;
}

Tensor targets_for(int64_t n, int64_t vocab) {
  Tensor t = Tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) t.data()[i] = static_cast<float>((i * 3 + 1) % vocab);
  return t;
}

double stddev(const Tensor& t) {
  double sum = 0, sq = 0;
  for (const float x : t.to_vector()) {
    sum += x;
    sq += static_cast<double>(x) * x;
  }
  const auto n = static_cast<double>(t.numel());
  return std::sqrt(sq / n - (sum / n) * (sum / n));
}

TEST(Gpt, ParameterCountMatchesTheFormula) {
  GptConfig c;
  c.vocab = 96;
  EXPECT_EQ(gpt_parameter_count(c), 116480);  // the header's worked example
  Rng rng(1);
  EXPECT_EQ(Gpt(c, rng).parameter_count(), 116480);
  const GptConfig s = small_config();
  EXPECT_EQ(Gpt(s, rng).parameter_count(), gpt_parameter_count(s));
  GptConfig three = s;
  three.layers = 3;
  three.hidden = 12;
  three.heads = 3;
  EXPECT_EQ(Gpt(three, rng).parameter_count(), gpt_parameter_count(three));
}

TEST(Gpt, NamesAndShapesAreNanoGptsInRegistrationOrder) {
  GptConfig c = small_config();
  c.layers = 1;
  Rng rng(2);
  const Gpt model(c, rng);
  const std::vector<std::pair<std::string, Shape>> want = {
      {"transformer.wte.weight", {11, 8}},
      {"transformer.wpe.weight", {8, 8}},
      {"transformer.h.0.ln_1.weight", {8}},
      {"transformer.h.0.ln_1.bias", {8}},
      {"transformer.h.0.attn.c_attn.weight", {24, 8}},
      {"transformer.h.0.attn.c_attn.bias", {24}},
      {"transformer.h.0.attn.c_proj.weight", {8, 8}},
      {"transformer.h.0.attn.c_proj.bias", {8}},
      {"transformer.h.0.ln_2.weight", {8}},
      {"transformer.h.0.ln_2.bias", {8}},
      {"transformer.h.0.mlp.c_fc.weight", {32, 8}},
      {"transformer.h.0.mlp.c_fc.bias", {32}},
      {"transformer.h.0.mlp.c_proj.weight", {8, 32}},
      {"transformer.h.0.mlp.c_proj.bias", {8}},
      {"transformer.ln_f.weight", {8}},
      {"transformer.ln_f.bias", {8}},
      {"lm_head.weight", {11, 8}}};
  const auto named = model.named_parameters();
  ASSERT_EQ(named.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(named[i].first, want[i].first) << i;
    EXPECT_EQ(named[i].second.shape(), want[i].second) << want[i].first;
  }
}

TEST(Gpt, InitialisationIsGpt2s) {
  GptConfig c;
  c.vocab = 64;
  c.layers = 2;
  c.hidden = 64;
  Rng rng(3);
  const Gpt model(c, rng);
  const double proj = 0.02 / std::sqrt(4.0);
  for (const auto& [name, p] : model.named_parameters()) {
    const std::vector<float> v = p.data().to_vector();
    const bool is_bias = name.ends_with(".bias");
    const bool is_ln = name.find("ln_") != std::string::npos;
    if (is_ln && !is_bias) {
      for (const float x : v) ASSERT_EQ(x, 1.0f) << name;
    } else if (is_bias) {
      for (const float x : v) ASSERT_EQ(x, 0.0f) << name;
    } else {
      const double want = name.ends_with("c_proj.weight") ? proj : 0.02;
      EXPECT_NEAR(stddev(p.data()), want, 0.1 * want) << name;
    }
  }
  Rng same(3);
  EXPECT_EQ(Gpt(c, same).named_parameters()[0].second.data().to_vector(),
            model.named_parameters()[0].second.data().to_vector());
}

TEST(Gpt, ForwardShapesAndItsErrorsNameTheNumbers) {
  Rng rng(4);
  Gpt model(small_config(), rng);
  const Variable logits = model.forward(Variable(ids_for(3, 5, 11)));
  EXPECT_EQ(logits.shape(), (Shape{15, 11}));
  try {
    model.forward(Variable(ids_for(1, 9, 11)));
    FAIL() << "a sequence longer than the context was accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find('9'), std::string::npos) << m;
    EXPECT_NE(m.find("context 8"), std::string::npos) << m;
  }
  GptConfig bad = small_config();
  bad.heads = 3;
  EXPECT_NE(bad.problem().find("3 heads do not divide hidden size 8"), std::string::npos)
      << bad.problem();
  EXPECT_THROW(Gpt(bad, rng), ConfigError);
}

TEST(Gpt, NarrowColumnsPassesGradcheck) {
  Tensor x = Tensor::empty({3, 7});
  for (int64_t i = 0; i < x.numel(); ++i) x.data()[i] = std::sin(0.3f * static_cast<float>(i));
  const GradcheckResult r = gradcheck(
      [](const std::vector<Variable>& v) { return narrow_columns(v[0], 2, 4) * 1.5f; }, {x});
  EXPECT_TRUE(r.ok) << r.detail;
}

TEST(Gpt, NaiveAndTiledModelsGiveTheSameLogitsAndGradients) {
  Rng a(5);
  Gpt naive(small_config(AttentionKind::naive), a);
  Rng b(5);
  Gpt tiled(small_config(AttentionKind::tiled), b);
  const Tensor ids = ids_for(2, 7, 11), targets = targets_for(14, 11);
  const Variable ln = naive.forward(Variable(ids));
  const Variable lt = tiled.forward(Variable(ids));
  EXPECT_LE(max_abs_diff(ln.data(), lt.data()), 1e-5f);
  cross_entropy(ln, targets).backward();
  cross_entropy(lt, targets).backward();
  const auto pn = naive.named_parameters(), pt = tiled.named_parameters();
  for (size_t i = 0; i < pn.size(); ++i) {
    EXPECT_LE(max_abs_diff(pn[i].second.grad(), pt[i].second.grad()), 1e-5f) << pn[i].first;
  }
}

TEST(Gpt, OverfitsOneBatch) {
  Rng rng(6);
  Gpt model(small_config(), rng);
  const std::vector<Variable> params = model.parameters();
  AdamW opt(params, {.lr = 1e-2, .beta2 = 0.95, .weight_decay = 0.0});
  const Tensor ids = ids_for(2, 8, 11), targets = targets_for(16, 11);
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    opt.zero_grad();
    const Variable loss = cross_entropy(model.forward(Variable(ids)), targets);
    loss.backward();
    clip_grad_norm(params, 1.0);
    opt.step();
    (step == 0 ? first : last) = loss.item();
  }
  EXPECT_LT(last, 0.5 * first) << "first " << first << ", last " << last;
}

TEST(AdamW, MatchesAHandComputedStepWithDecoupledDecay) {
  const double lr = 0.1, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.5;
  std::vector<Variable> params{
      Variable(Tensor::from_vector({2, 2}, {0.5f, -1.0f, 2.0f, 0.25f}), true),
      Variable(Tensor::from_vector({3}, {1.0f, -2.0f, 3.0f}), true)};
  AdamW opt(params, {.lr = lr, .beta1 = b1, .beta2 = b2, .eps = eps, .weight_decay = wd},
            decay_matrices(params));
  EXPECT_TRUE(opt.decays(0));
  EXPECT_FALSE(opt.decays(1));  // a vector: a bias or a gain
  std::vector<std::vector<double>> p = {{0.5, -1.0, 2.0, 0.25}, {1.0, -2.0, 3.0}};
  std::vector<std::vector<double>> m = {{0, 0, 0, 0}, {0, 0, 0}}, v = m;
  for (int t = 1; t <= 2; ++t) {
    for (size_t k = 0; k < 2; ++k) {
      std::vector<float> g(p[k].size());
      for (size_t j = 0; j < g.size(); ++j)
        g[j] = static_cast<float>(std::cos(1.0 + j + 2 * k + t));
      params[k].set_grad(Tensor::from_vector(params[k].shape(), g));
      for (size_t j = 0; j < g.size(); ++j) {
        if (k == 0) p[k][j] *= 1 - lr * wd;
        m[k][j] = b1 * m[k][j] + (1 - b1) * g[j];
        v[k][j] = b2 * v[k][j] + (1 - b2) * g[j] * g[j];
        const double mhat = m[k][j] / (1 - std::pow(b1, t)), vhat = v[k][j] / (1 - std::pow(b2, t));
        p[k][j] -= lr * mhat / (std::sqrt(vhat) + eps);
      }
    }
    opt.step();
  }
  for (size_t k = 0; k < 2; ++k) {
    const std::vector<float> got = params[k].data().to_vector();
    for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j], p[k][j], 1e-6) << k << "," << j;
  }
  const NamedTensors state = opt.state_tensors();
  ASSERT_EQ(state.size(), 4U);
  EXPECT_EQ(state[0].first, "0.exp_avg");
  EXPECT_EQ(state[1].first, "0.exp_avg_sq");
  EXPECT_THROW(AdamW(params, {.lr = 0}), ConfigError);
  EXPECT_THROW(AdamW(params, {}, {true}), ConfigError);  // one flag for two parameters
}

TEST(ClipGradNorm, ScalesToTheCapOnlyAboveIt) {
  std::vector<Variable> params{Variable(Tensor::zeros({2}), true),
                               Variable(Tensor::zeros({1}), true),
                               Variable(Tensor::zeros({4}), true)};  // the last has no grad
  params[0].set_grad(Tensor::from_vector({2}, {3.0f, 4.0f}));
  params[1].set_grad(Tensor::from_vector({1}, {12.0f}));
  EXPECT_NEAR(clip_grad_norm(params, 20.0), 13.0, 1e-9);  // below the cap: unchanged
  EXPECT_EQ(params[1].grad().item(), 12.0f);
  EXPECT_NEAR(clip_grad_norm(params, 6.5), 13.0, 1e-9);
  const double coef = 6.5 / (13.0 + 1e-6);
  EXPECT_NEAR(params[0].grad().data()[1], 4.0 * coef, 1e-6);
  EXPECT_NEAR(params[1].grad().item(), 12.0 * coef, 1e-6);
  EXPECT_NEAR(grad_norm(params), 6.5, 1e-5);
  EXPECT_FALSE(params[2].grad().defined());
  EXPECT_THROW(clip_grad_norm(params, 0.0), ConfigError);
}

TEST(CosineSchedule, WarmsUpPeaksAndDecaysToTheMinimum) {
  const CosineSchedule s{.max_lr = 1.0, .min_lr = 0.1, .warmup_steps = 4, .decay_steps = 12};
  EXPECT_EQ(s.problem(), "");
  EXPECT_DOUBLE_EQ(s.lr(0), 1.0 / 5);  // (s + 1) / (W + 1)
  EXPECT_DOUBLE_EQ(s.lr(3), 4.0 / 5);
  EXPECT_DOUBLE_EQ(s.lr(4), 1.0);                // the peak
  EXPECT_NEAR(s.lr(8), 0.1 + 0.5 * 0.9, 1e-12);  // half way down the cosine
  EXPECT_NEAR(s.lr(12), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.lr(100), 0.1);
  const CosineSchedule bad{.max_lr = 1.0, .min_lr = 0.1, .warmup_steps = 5, .decay_steps = 4};
  EXPECT_NE(bad.problem(), "");
}

TEST(Gpt, CheckpointRoundTripsWithItsVocabulary) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpt_test_checkpoint";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "gpt.safetensors").string();
  const CharTokenizer tok("hello world\n%");
  GptConfig c = small_config();
  c.vocab = tok.vocab_size();
  Rng rng(7);
  Gpt model(c, rng);
  const std::vector<Variable> params = model.parameters();
  AdamW opt(params, {.lr = 1e-2}, decay_matrices(params));
  const Tensor ids = ids_for(2, 6, c.vocab), targets = targets_for(12, c.vocab);
  cross_entropy(model.forward(Variable(ids)), targets).backward();
  opt.step();
  save_checkpoint(path, model, &opt);
  save_vocab(tok, vocab_path_for(path));
  Rng other(8);
  Gpt fresh(c, other);
  AdamW fresh_opt(fresh.parameters(), {.lr = 1e-2});
  load_checkpoint(path, fresh, &fresh_opt);
  EXPECT_EQ(fresh.forward(Variable(ids)).data().to_vector(),
            model.forward(Variable(ids)).data().to_vector());
  EXPECT_EQ(fresh_opt.step_count(), 1);
  EXPECT_EQ(load_vocab(vocab_path_for(path)).bytes(), tok.bytes());
  GptConfig wider = c;
  wider.hidden = 12;
  Gpt other_shape(wider, other);
  EXPECT_THROW(load_checkpoint(path, other_shape, nullptr), ConfigError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace course
