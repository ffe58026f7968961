// memory_training_flags.h: lesson 18, given: ./lesson18's flags: lesson 17's
// (gpt_training_flags.h) with this lesson's defaults, and the precision, the policy, the
// loss scale and the tolerance, each checked when it is parsed. Kept apart from
// memory_training.h because flags.h is costly to compile.
#pragma once

#include "flag_checks.h"
#include "flags.h"
#include "gpt_training_flags.h"
#include "memory_training.h"

namespace course {

/// Adds lesson 17's flags and this lesson's to `flags`, bound to `o`.
inline void add_memory_training_flags(Flags& flags, MemoryTrainingOptions& o) {
  add_gpt_training_flags(flags, o);
  flags.option("--precision", o.precision, "fp32, or bf16 / fp16 with float32 master weights")
      .check(one_of({"fp32", "bf16", "fp16"}))
      .show_default();
  flags.option("--recompute", o.recompute, "activation recomputation: none, selective, full")
      .check(one_of({"none", "selective", "full"}))
      .show_default();
  flags.option("--loss-scale", o.loss_scale, "fp16: dynamic (GradScaler) or none")
      .check(one_of({"dynamic", "none"}))
      .show_default();
  flags.option("--tolerance", o.tolerance, "nats/char a 16-bit run may end above float32's")
      .check(number_in(0, 10))
      .show_default();
  flags.option("--growth-interval", o.growth_interval, "GradScaler: clean steps before x2")
      .check(count_in(1, 1000000))
      .show_default();
}

}  // namespace course
