// gpt_training.h: lesson 17, given: ./lesson17's training run: the fortunes corpus, the
// bigram baseline, the GPT trained with AdamW, evaluated, sampled and checkpointed.
//
//   GptTrainingOptions o;                        // the defaults train in about 2 minutes
//   Verdict v = run_gpt_training(o, std::cout);
//
// The run, on one process and one BLAS thread:
//   1. load_fortunes(--data) and split it (text_corpus.h); the tokenizer is the training
//      text's bytes, or the vocabulary file beside --init.
//   2. The bigram model (bigram.h) fit on the training tokens, its loss on the validation
//      windows: the baseline.
//   3. The GPT (gpt.h) of --layers, --heads, --hidden and context --seq-len (or --init's),
//      trained for --steps steps on random [batch, seq-len] windows: cross-entropy, loss
//      backward, clip_grad_norm to 1.0, AdamW (β = (0.9, 0.95), weight decay 0.1 on the 2-D
//      weights only, as nanoGPT), the learning rate warmed up over the first 5% of the steps
//      and decayed by a cosine to a tenth of --lr (lr_schedule.h).
//   4. Every --eval-every steps and at the end: the mean loss on the fixed validation
//      windows (the same windows as the bigram's), without a graph.
//   5. A sample: --sample characters drawn at temperature 0.8 after a fortune's end ("%\n").
//   6. --checkpoint: the weights and AdamW's state as safetensors (checkpoint.h) with the
//      model's shape in the metadata, the vocabulary beside it (vocab_path_for), then loaded
//      into a fresh model that must give the same validation loss, bit for bit.
// PASS when the final validation loss is below the bigram's by at least --margin nats.
//
// THE STEP SEAM. Step 3's body (zero the gradients, forward, loss, backward, clip, set the
// learning rate, step) is standard_gpt_step; a later lesson passes its own step (lesson 18:
// mixed precision with a loss scaler) and a `prepare` that fits the model out before the
// first forward (lesson 18: recomputation and 16-bit activations, gpt.h's SEAMS), in
// GptTrainingSeams. The loop around it (batches, evaluation, logging, the checkpoint) stays
// this file's.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "adamw.h"
#include "driver.h"
#include "gpt.h"
#include "text_corpus.h"

namespace course {

/// What one training step is handed (see THE STEP SEAM).
struct GptStepContext {
  Gpt& model;
  const std::vector<Variable>& params;  ///< model.parameters(), the optimizer's order
  AdamW& optimizer;
  const TokenBatch& batch;  ///< inputs [B, S], targets [B*S]
  double lr = 0;            ///< this step's learning rate (the schedule's)
  double clip = 0;          ///< the gradient-norm cap
  int64_t step = 0;         ///< 0-based
};

/// What one training step reports.
struct GptStepResult {
  double loss = 0;       ///< the batch's mean cross-entropy (unscaled)
  double grad_norm = 0;  ///< the gradients' norm before clipping (0 when skipped)
  bool skipped = false;  ///< the optimizer did not step (a loss scaler found inf or NaN)
};

/// One step: zero_grad, cross_entropy(model(inputs), targets), backward, clip_grad_norm to
/// clip, set_lr(lr), step.
GptStepResult standard_gpt_step(const GptStepContext& c);

/// A later lesson's changes to train_gpt (see THE STEP SEAM); empty members: lesson 17's.
struct GptTrainingSeams {
  std::function<void(Gpt&)> prepare;                         ///< once, after initialisation
  std::function<GptStepResult(const GptStepContext&)> step;  ///< every step
  std::function<void(Gpt&)> finish;  ///< once, after the last step and the final evaluation
};

/// ./lesson17's flags (gpt_training_flags.h), with their defaults.
struct GptTrainingOptions {
  std::string data = kFortunesDir;  ///< the directory of the fortune files
  int64_t steps = 800;              ///< optimizer steps
  int64_t seq_len = 64;             ///< S: tokens per window (and the context, without --init)
  int64_t batch_size = 16;          ///< B: windows per step
  int64_t layers = 2;               ///< L
  int64_t heads = 4;                ///< attention heads
  int64_t hidden = 64;              ///< H
  double lr = 3e-3;                 ///< the peak learning rate
  double weight_decay = 0.1;        ///< AdamW's, on 2-D weights
  double clip = 1.0;                ///< the gradient-norm cap
  uint64_t seed = 1;                ///< initialisation, batches and the sample
  std::string attention = "tiled";  ///< naive or tiled
  std::string init;                 ///< a checkpoint to start from ("" none)
  std::string checkpoint;           ///< where to save the final checkpoint ("" nowhere)
  int64_t eval_every = 100;         ///< steps between validation losses (0: only at the end)
  int64_t eval_batches = 8;         ///< validation batches of B windows each
  double margin = 0.10;             ///< nats the GPT must beat the bigram by
  int64_t sample = 240;             ///< characters of the sample (0: none)
};

/// What a training run measured.
struct GptTrainingResult {
  double bigram_loss = 0;            ///< the bigram's validation loss (nats/char)
  double initial_loss = 0;           ///< the GPT's validation loss before training
  double final_loss = 0;             ///< ... after training
  std::vector<double> train_losses;  ///< every step's training loss
  int64_t skipped_steps = 0;         ///< steps the step seam skipped (GptStepResult::skipped)
  double train_seconds = 0;          ///< the steps alone (no evaluation)
  double tokens_per_second = 0;      ///< B S steps / train_seconds
  int64_t parameters = 0;            ///< the model's parameter count
  int64_t vocab = 0;                 ///< the tokenizer's size
  std::string sample;                ///< the generated text
};

/// "" when --heads divides --hidden, else the usage error naming both (what --bench checks).
std::string check_gpt_shape_flags(const GptTrainingOptions& o);

/// "" when the flags make a run, else the usage error (exit 64): heads that do not divide
/// the hidden size (naming both), a corpus file missing or empty (naming it), --init missing
/// or of another shape than the flags (naming both shapes) or than its vocabulary file, or
/// --seq-len above the context of --init's model (naming both).
std::string check_gpt_training_flags(const GptTrainingOptions& o);

/// Steps 2 to 6 above on `text`, logging to `out` when not null, each step through
/// `seams` (see THE STEP SEAM). ConfigError on bad sizes.
GptTrainingResult train_gpt(const GptTrainingOptions& o, const TextSplit& text, std::ostream* out,
                            const GptTrainingSeams& seams = {});

/// The verdict on a run's result: PASS when its final loss is below the bigram's by
/// o.margin.
Verdict gpt_training_verdict(const GptTrainingOptions& o, const GptTrainingResult& r);

/// The whole run (steps 1 to 6) and its verdict.
Verdict run_gpt_training(const GptTrainingOptions& o, std::ostream& out);

}  // namespace course
