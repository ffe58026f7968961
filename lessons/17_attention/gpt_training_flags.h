// gpt_training_flags.h: lesson 17, given: ./lesson17's flags for gpt_training.h, each
// checked when it is parsed (flag_checks.h: a bad value is a usage error, exit 64).
//
//   GptTrainingOptions o;
//   add_gpt_training_flags(flags, o);    // --data, --steps, --seq-len, ..., --margin
//
// Checks between flags (heads dividing hidden, the corpus, --init's shape) come after
// parsing, from check_gpt_training_flags (gpt_training.h), as the driver's check_flags.
// Kept apart from gpt_training.h because flags.h is costly to compile (training_flags.h
// says why).
#pragma once

#include <cstdint>

#include "flag_checks.h"
#include "flags.h"
#include "gpt_training.h"

namespace course {

/// Adds every flag of GptTrainingOptions with its range check.
inline void add_gpt_training_flags(Flags& flags, GptTrainingOptions& o) {
  flags.option("--data", o.data, "directory of the fortune files (Debian's fortunes package)")
      .show_default();
  flags.option("--steps", o.steps, "optimizer steps (0: evaluate --init only)")
      .check(count_in(0, 1000000))
      .show_default();
  flags.option("--seq-len", o.seq_len, "S: tokens per window; the context without --init")
      .check(count_in(1, 4096))
      .show_default();
  flags.option("--batch-size", o.batch_size, "B: windows per step")
      .check(count_in(1, 4096))
      .show_default();
  flags.option("--layers", o.layers, "transformer blocks").check(count_in(1, 64)).show_default();
  flags.option("--heads", o.heads, "attention heads (must divide --hidden)")
      .check(count_in(1, 256))
      .show_default();
  flags.option("--hidden", o.hidden, "H: the model's width")
      .check(count_in(1, 8192))
      .show_default();
  flags.option("--lr", o.lr, "AdamW's peak learning rate (warm-up, then cosine to lr/10)")
      .check(number_in(1e-6, 1.0))
      .show_default();
  flags.option("--weight-decay", o.weight_decay, "AdamW's decoupled decay of 2-D weights")
      .check(number_in(0, 1))
      .show_default();
  flags.option("--clip", o.clip, "the gradient-norm cap").check(positive_number()).show_default();
  flags.option("--seed", o.seed, "seed for initialisation, batches and the sample").show_default();
  flags.option("--attention", o.attention, "causal self-attention kernel")
      .check(one_of({"naive", "tiled"}))
      .show_default();
  flags.option("--init", o.init, "start from this checkpoint (its vocabulary file beside it)");
  flags.option("--checkpoint", o.checkpoint, "save the final checkpoint (and vocabulary) here")
      .check(writable(OutputPath::kFile));
  flags.option("--eval-every", o.eval_every, "steps between validation losses (0: at the end)")
      .check(count_in(0, 1000000))
      .show_default();
  flags.option("--eval-batches", o.eval_batches, "validation batches of --batch-size windows")
      .check(count_in(1, 10000))
      .show_default();
  flags.option("--margin", o.margin, "nats/char the GPT must beat the bigram's loss by")
      .check(number_in(-10, 10))
      .show_default();
  flags.option("--sample", o.sample, "characters to generate after training (0: none)")
      .check(count_in(0, 100000))
      .show_default();
}

}  // namespace course
