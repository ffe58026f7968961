// memory_training.h: lesson 18, given: ./lesson18's training run: lesson 17's GPT and
// loop (gpt_training.h) in a chosen precision and recomputation policy, judged against the
// bigram and, for 16 bits, against the same run in float32.
//
//   MemoryTrainingOptions o;              // lesson 17's flags, plus precision and policy
//   o.precision = "fp16";
//   Verdict v = run_memory_training(o, std::cout);
//
// The run: install_model_seams(policy, precision) as train_gpt's `prepare`, and
// mixed_precision_step (with a GradScaler for fp16 unless --loss-scale none) as its step.
// With --precision bf16 or fp16, the same run in float32 (the same seed, so the same
// initialisation and batches; no recomputation, which changes no number) first, as the
// reference. Before training, the activations the graph keeps for one step are printed
// from the ledger beside activation_ledger.h's formula.
//
// PASS when the final validation loss is below the bigram's by --margin nats and, for bf16
// and fp16, within --tolerance nats of the float32 run's (the README justifies the default
// from measured runs). An fp16 run whose loss scale falls to its floor stops there
// (GradScaler's ScaleCollapse, naming the step): a FAIL with that message.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "driver.h"
#include "gpt_training.h"
#include "precision.h"

namespace course {

/// ./lesson18's flags (memory_training_flags.h) for training.
struct MemoryTrainingOptions : GptTrainingOptions {
  std::string precision = "fp32";      ///< fp32, bf16, fp16
  std::string recompute = "none";      ///< none, selective, full
  std::string loss_scale = "dynamic";  ///< fp16: dynamic (GradScaler) or none
  double tolerance = 0.05;             ///< nats/char a 16-bit run may end above fp32's
  int64_t growth_interval = 200;       ///< GradScaler's clean steps before the scale grows
  MemoryTrainingOptions() {
    steps = 600;
    eval_every = 100;
  }
};

/// "" when the flags make a run, else the usage error: lesson 17's checks, then
/// --loss-scale none without --precision fp16 (nothing to scale).
std::string check_memory_training_flags(const MemoryTrainingOptions& o);

/// What one run of train_gpt in a precision and policy gave.
struct MemoryRunResult {
  GptTrainingResult training;
  double final_scale = 0;  ///< fp16 with a scaler: the scale at the end (else 0)
};

/// One training run in o.precision and o.recompute (no reference), logging to `out` when
/// not null, adding the 16-bit rounding's flushed gradients into `flushed` when not null.
/// ScaleCollapse propagates.
/// `finish`, when set, is train_gpt's finish seam (the trained model, once).
MemoryRunResult train_in_precision(const MemoryTrainingOptions& o, const TextSplit& text,
                                   std::ostream* out, FlushCount* flushed = nullptr,
                                   const std::function<void(Gpt&)>& finish = {});

/// The whole run and its verdict (see the top of this file).
Verdict run_memory_training(const MemoryTrainingOptions& o, std::ostream& out);

}  // namespace course
