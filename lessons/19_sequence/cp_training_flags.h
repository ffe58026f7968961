// cp_training_flags.h: lesson 19, given: ./lesson19's flags: lesson 17's
// (gpt_training_flags.h) and the mesh's and sequence split's, each checked when parsed.
// Checks against the world size (--cp x --tp dividing it, --seq-len by 2C) are
// check_cp_training_flags (cp_training.h), run by the driver's check_flags.
#pragma once

#include "cp_training.h"
#include "flag_checks.h"
#include "flags.h"
#include "gpt_training_flags.h"

namespace course {

/// Adds lesson 17's flags and this lesson's to `flags`, bound to `o`.
inline void add_cp_training_flags(Flags& flags, CpTrainingOptions& o) {
  add_gpt_training_flags(flags, o);
  flags.option("--cp", o.cp, "C: ranks each sequence is split over (0: all; dp = np / C)")
      .check(count_in(0, 64))
      .show_default();
  flags.option("--tp", o.tp, "T: ranks each block's heads are split over (tp_sequence.h)")
      .check(count_in(1, 64))
      .show_default();
  flags
      .option("--sequence-parallel", o.sequence_parallel,
              "with --tp: LayerNorm and the residual sharded along the sequence (Megatron SP)")
      .check(one_of({"on", "off"}))
      .show_default();
  flags.option("--cp-attention", o.cp_attention, "attention over the cp group")
      .check(one_of({"ring", "ulysses"}))
      .show_default();
  flags.option("--layout", o.layout, "which tokens each cp rank holds")
      .check(one_of({"zigzag", "contiguous"}))
      .show_default();
  flags
      .option("--equivalence-steps", o.equivalence_steps,
              "steps of the check against one process before training (0: none)")
      .check(count_in(0, 1000))
      .show_default();
  flags.option("--memory-budget", o.memory_budget_mib, "--bench: MiB per rank for table 3")
      .check(number_in(0.01, 1e7))
      .show_default();
}

}  // namespace course
