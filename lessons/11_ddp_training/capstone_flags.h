// capstone_flags.h: lesson 11, given: ./lesson11's command-line flags (CapstoneOptions,
// capstone.h).
//
//   CapstoneOptions o;  add_capstone_flags(flags, o);       // in main.cpp
//
// Declared through flags.h, as training_flags.h says.
#pragma once

#include <cstdint>

#include "capstone.h"
#include "ddp_training_flags.h"
#include "flag_checks.h"
#include "flags.h"

namespace course {

/// CapstoneOptions' defaults, with the capstone's epochs and hidden sizes, on `flags`.
inline void add_capstone_flags(Flags& flags, CapstoneOptions& o) {
  o.train.epochs = kCapstoneEpochs;
  o.train.hidden = {256, 256};
  o.train.batch_size = 64;
  add_ddp_training_flags(flags, o.train);
  flags.flag("--sync-bn", o.sync_bn, "SyncBatchNorm: batch statistics over every rank's rows");
  flags.option("--run-dir", o.run_dir, "data cache, curves.csv and curves.svg")
      .check(writable(OutputPath::kDirectory))
      .show_default();
  flags
      .option("--checkpoint-dir", o.checkpoint_dir,
              "rank 0 writes epoch-NNNN.safetensors here (default RUN_DIR/checkpoints)")
      .check(writable(OutputPath::kDirectory));
  flags.flag("--resume", o.resume, "continue from the newest checkpoint in --checkpoint-dir");
  flags
      .option("--crash-at-step", o.crash_step,
              "fault injection: rank --crash-rank kills itself (SIGKILL) before this step")
      .check(count_in(-1, INT64_MAX));
  flags
      .option("--target", o.target,
              "final test accuracy the verdict requires (0..1); the default needs the "
              "default --epochs on the whole data set: lower it for short runs")
      .check(number_in(0, 1))
      .show_default();
  flags.option("--crash-rank", o.crash_rank, "the rank --crash-at-step kills")
      .check(count_in(0, 63))
      .show_default();
}

}  // namespace course
