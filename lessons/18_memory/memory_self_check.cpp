// memory_self_check.cpp: lesson 18, given: ./lesson18's self-check (memory_self_check.h).
#include "memory_self_check.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "activation_ledger.h"
#include "gpt.h"
#include "gpt_ops.h"
#include "grad_scaler.h"
#include "ops.h"
#include "optimizer.h"
#include "recompute.h"
#include "recompute_policy.h"

namespace course {

const char* const kLesson18SelfCheckPassed =
    "self-check: checkpoint and GradScaler agree with the run they replace";

namespace {

GptConfig check_config() {
  GptConfig c;
  c.vocab = 13;
  c.context = 9;
  c.layers = 2;
  c.heads = 2;
  c.hidden = 8;
  c.attention = AttentionKind::naive;
  return c;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), sizeof(float) * a.numel()) == 0;
}

std::string check_policy(RecomputePolicy policy) {
  const GptConfig c = check_config();
  const TokenBatch batch = counting_batch(c.vocab, 2, 9);
  Rng r1(4), r2(4);
  Gpt plain(c, r1), recomputed(c, r2);
  const std::string where = std::string("checkpoint (recompute ") + recompute_policy_name(policy) +
                            ", on a 2-block GPT): ";
  int forwards = 0;
  install_model_seams(recomputed, policy, Precision::fp32);
  if (policy == RecomputePolicy::full) {
    recomputed.set_block_runner([&forwards](GptBlock& block, const Variable& x) {
      return checkpoint(
          [&forwards, &block](const std::vector<Variable>& in) {
            ++forwards;
            return block.forward(in[0]);
          },
          {x});
    });
  }
  const Variable l1 = cross_entropy(plain.forward(Variable(batch.inputs)), batch.targets);
  const Variable l2 = cross_entropy(recomputed.forward(Variable(batch.inputs)), batch.targets);
  if (l1.item() != l2.item()) {
    return where + "the loss is " + std::to_string(l2.item()) + ", without recomputation " +
           std::to_string(l1.item()) + ": the forward must return fn's value";
  }
  std::vector<Tensor> params;
  for (const Variable& p : recomputed.parameters()) params.push_back(p.data());
  const int64_t kept = saved_tensor_ledger(l2, params).total_bytes;
  const int64_t expected = gpt_activation_formula(c, 2, 9, policy, Precision::fp32).total();
  if (kept != expected) {
    return where + "the graph keeps " + std::to_string(kept) + " bytes of activations, the " +
           "formula " + std::to_string(expected) +
           ": the forward must run fn without recording and keep only its inputs";
  }
  l1.backward();
  l2.backward();
  if (policy == RecomputePolicy::full && forwards != 2 * c.layers) {
    return where + "fn ran " + std::to_string(forwards) + " times for " + std::to_string(c.layers) +
           " blocks, expected " + std::to_string(2 * c.layers) +
           " (once forward, once again in backward)";
  }
  const auto p1 = plain.named_parameters(), p2 = recomputed.named_parameters();
  for (size_t i = 0; i < p1.size(); ++i) {
    if (!same_bits(p1[i].second.grad(), p2[i].second.grad())) {
      return where + "the gradient of " + p1[i].first +
             (p2[i].second.grad().defined() ? " differs from" : " is missing, unlike") +
             " the run without recomputation (it must be bit-identical)";
    }
  }
  return "";
}

// The contract's corners on a small region gelu(x W^T) * y, W captured: the gradients of a
// backward run under a caller's NoGradGuard, of an input fn does not use (zeros), and of
// W when no input requires grad.
std::string check_contract() {
  Variable w(Tensor::from_vector({3, 2}, {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 1.5f}), true);
  const CheckpointFn region = [&w](const std::vector<Variable>& in) {
    return mul(gelu(linear(in[0], w, Variable())), in[1]);
  };
  const Tensor x = Tensor::from_vector({2, 2}, {1.0f, -2.0f, 0.5f, 3.0f});
  const Tensor y = Tensor::from_vector({2, 3}, {1.0f, 2.0f, -1.0f, 0.5f, -0.5f, 3.0f});
  // The plain run's gradients.
  const Variable xp(x.clone(), true), yp(y.clone(), true);
  sum(region({xp, yp})).backward();
  const Tensor wp = w.grad().clone();
  w.zero_grad();
  const Variable xc(x.clone(), true), yc(y.clone(), true), unused(Tensor::zeros({4}), true);
  const Variable loss = sum(checkpoint(region, {xc, yc, unused}));
  {
    const NoGradGuard no_grad;  // a caller's: the recomputation must record anyway
    loss.backward();
  }
  if (!same_bits(xc.grad(), xp.grad()) || !same_bits(w.grad(), wp)) {
    return "CheckpointBackward::apply: under a caller's NoGradGuard the gradients are " +
           std::string(xc.grad().defined() ? "wrong" : "missing") +
           " (the recomputation must record its forward: EnableGradGuard)";
  }
  if (!unused.grad().defined() || unused.grad().to_vector() != std::vector<float>(4, 0.0f)) {
    return "CheckpointBackward::apply: an input fn does not use must get a gradient of zeros";
  }
  w.zero_grad();
  const Variable frozen = checkpoint(region, {Variable(x.clone()), Variable(y.clone())});
  if (!frozen.requires_grad()) {
    return "checkpoint: with no input requiring grad the result records nothing, so the "
           "captured parameters get no gradient (record whenever grad mode is on)";
  }
  sum(frozen).backward();
  if (!same_bits(w.grad(), wp)) {
    return "checkpoint: with no input requiring grad, the captured parameter's gradient differs "
           "from the run without checkpoint";
  }
  return "";
}

std::string check_scaler() {
  GradScaler scaler({.init_scale = 1024, .growth_interval = 2});
  Variable w(Tensor::from_vector({2}, {0.5f, -1.0f}), true);
  Sgd sgd({w}, {.lr = 0.1f});
  const auto loss_of = [&w] { return sum(mul(w, w)); };  // dL/dw = 2w
  scaler.scale(loss_of()).backward();
  if (w.grad().to_vector() != std::vector<float>{1024.0f, -2048.0f}) {
    return "GradScaler::scale: the gradient of (loss x 1024) is [" +
           std::to_string(w.grad().to_vector()[0]) + ", ...], expected [1024, -2048]";
  }
  scaler.unscale_({w});
  if (w.grad().to_vector() != std::vector<float>{1.0f, -2.0f} || scaler.found_inf()) {
    return "GradScaler::unscale_: the gradients [1024, -2048] at scale 1024 became [" +
           std::to_string(w.grad().to_vector()[0]) + ", " +
           std::to_string(w.grad().to_vector()[1]) + "], expected [1, -2], no inf";
  }
  if (!scaler.step(sgd)) return "GradScaler::step: a clean step was skipped";
  scaler.update();
  if (scaler.get_scale() != 1024) {
    return "GradScaler::update: the scale is " + std::to_string(scaler.get_scale()) +
           " after 1 clean step of growth_interval 2, expected 1024 (not yet grown)";
  }
  const std::vector<float> before = w.data().to_vector();
  w.grad().data()[0] = INFINITY;
  if (scaler.step(sgd)) {
    return "GradScaler::step: a step whose gradients hold inf was taken (it must be skipped)";
  }
  if (w.data().to_vector() != before) {
    return "GradScaler::step: the optimizer changed the parameters on a step with inf";
  }
  scaler.update();
  if (scaler.get_scale() != 512) {
    return "GradScaler::update: after an inf the scale is " + std::to_string(scaler.get_scale()) +
           ", expected 512 (1024 x backoff 0.5)";
  }
  for (int i = 1; i <= 2; ++i) {
    sgd.zero_grad();
    scaler.scale(loss_of()).backward();
    scaler.step(sgd);
    scaler.update();
    const double expected = i == 1 ? 512 : 1024;
    if (scaler.get_scale() != expected) {
      return "GradScaler::update: after an inf then " + std::to_string(i) +
             " clean step(s) (growth_interval 2) the scale is " +
             std::to_string(scaler.get_scale()) + ", expected " + std::to_string(expected) +
             " (the clean steps count again from 0 after an inf)";
    }
  }
  // A NaN is an overflow too; two in a row below the floor stop the run, naming the step.
  GradScaler floor({.init_scale = 1024, .growth_interval = 2, .min_scale = 512});
  const auto bad_step = [&](float value) {
    sgd.zero_grad();
    floor.scale(loss_of()).backward();
    w.grad().data()[1] = value;
    return floor.step(sgd);
  };
  if (bad_step(NAN)) {
    return "GradScaler::step: a step whose gradients hold NaN was taken (inf or NaN: skip it)";
  }
  floor.update();  // 1024 -> 512, at the floor
  bad_step(INFINITY);
  try {
    floor.update();  // 512 -> 256, below it
    return "GradScaler::update: the scale fell to " + std::to_string(floor.get_scale()) +
           ", below min_scale 512, without ScaleCollapse";
  } catch (const ScaleCollapse& e) {
    const std::string what = e.what();
    if (what.find("step 1") == std::string::npos || what.find("2 skipped") == std::string::npos) {
      return "GradScaler::update: ScaleCollapse must name the step (1) and the skipped steps in "
             "a row (2): it said \"" +
             what + "\"";
    }
  }
  return "";
}

}  // namespace

std::string memory_self_check(std::ostream& out) {
  for (const RecomputePolicy policy : {RecomputePolicy::selective, RecomputePolicy::full}) {
    if (std::string problem = check_policy(policy); !problem.empty()) return problem;
    out << "  checkpoint, recompute " << recompute_policy_name(policy)
        << ": gradients bit-identical, the graph as the formula" << std::endl;
  }
  if (std::string problem = check_contract(); !problem.empty()) return problem;
  out << "  checkpoint: under a caller's no-grad, an unused input, parameters without inputs"
      << std::endl;
  if (std::string problem = check_scaler(); !problem.empty()) return problem;
  out << "  GradScaler: scale, unscale_, skipped steps on inf and NaN, backoff, growth, the floor"
      << std::endl;
  return "";
}

}  // namespace course
