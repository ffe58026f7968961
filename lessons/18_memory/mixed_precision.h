// mixed_precision.h: lesson 18, given: a training step in bf16 or fp16 with float32 master
// weights, the step lesson 17's train_gpt runs through its seam (gpt_training.h).
//
//   GradScaler scaler;
//   MixedPrecision mp{.precision = Precision::fp16, .scaler = &scaler};
//   seams.step = [&](const GptStepContext& c) { return mixed_precision_step(c, mp); };
//
// THE STEP (the recipe of Micikevicius et al. 2018, "Mixed Precision Training", and of
// torch.autocast with fp32 parameters):
//   1. The master weights are the model's parameters, float32, as the optimizer keeps
//      them. Each is copied aside and rounded in place to 16 bits: the forward and the
//      backward see the 16-bit weights (torch.autocast's cast copies).
//   2. Forward; the logits cast to 16 bits (precision.h's cast: its backward rounds
//      dL/dlogits to 16 bits, the first gradient to underflow); the loss in float32; with
//      a scaler, loss x scale; backward.
//   3. The float32 master values back into the parameters; every gradient rounded to 16
//      bits (what a 16-bit weight's gradient holds), then unscaled in float32 (the
//      scaler's unscale_: inf or NaN found means the step is skipped and the scale backs off).
//   4. clip_grad_norm in float32, the learning rate, AdamW's step on the float32 masters,
//      the scaler's update.
// With Precision::fp32 it is lesson 17's standard_gpt_step (a scaler is then refused).
// Activations inside the model are rounded where gpt.h's seams let lesson 18 reach them
// (recompute_policy.h's install_model_seams): each block's input and output and each
// attention core's q, k, v and output.
//
// Why master weights: a bf16 weight near 1 moves only in steps of 2^-7 = 0.0078; an update
// of lr x g = 1e-4 is lost to rounding every time, and the weight never trains. The
// float32 master accumulates such updates; the 16-bit copy is cut from it each step.
#pragma once

#include <cstdint>

#include "gpt_training.h"
#include "grad_scaler.h"
#include "precision.h"

namespace course {

struct MixedPrecision {
  Precision precision = Precision::fp32;
  GradScaler* scaler = nullptr;  ///< fp16's loss scaler (nullptr: unscaled)
  /// When not null, each step's count of gradient elements flushed to zero by the 16-bit
  /// rounding of step 3 (before unscaling), summed over steps.
  FlushCount* flushed = nullptr;
};

/// One step of THE STEP on c (see above). A skipped step (an inf or NaN in the gradients)
/// reports skipped = true and grad_norm 0. ConfigError: fp32 with a scaler.
GptStepResult mixed_precision_step(const GptStepContext& c, const MixedPrecision& mp);

}  // namespace course
