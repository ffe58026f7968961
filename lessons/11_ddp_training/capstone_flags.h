// capstone_flags.h: lesson 11, given: ./lesson11's command-line flags (CapstoneOptions,
// capstone.h).
//
//   CapstoneOptions o;  add_capstone_flags(app, o);       // in main.cpp
//
// Inline, as training_flags.h says why: only main.cpp (and the test of the flags) compile
// CLI11's header for them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

#include "capstone.h"
#include "ddp_training_flags.h"
#include "flag_checks.h"

namespace course {

/// CapstoneOptions' defaults, with the capstone's epochs and hidden sizes, on `app`.
inline void add_capstone_flags(CLI::App& app, CapstoneOptions& o) {
  o.train.epochs = 10;
  o.train.hidden = {256, 256};
  o.train.batch_size = 64;
  add_ddp_training_flags(app, o.train);
  app.add_flag("--sync-bn", o.sync_bn, "SyncBatchNorm: batch statistics over every rank's rows");
  app.add_option("--run-dir", o.run_dir, "data cache, curves.csv and curves.svg")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "rank 0 writes epoch-NNNN.safetensors here (default RUN_DIR/checkpoints)");
  app.add_flag("--resume", o.resume, "continue from the newest checkpoint in --checkpoint-dir");
  app.add_option("--crash-at-step", o.crash_step,
                 "fault injection: rank --crash-rank kills itself (SIGKILL) before this step")
      ->check(count_in(-1, INT64_MAX));
  app.add_option("--target", o.target, "final test accuracy the verdict requires (0..1)")
      ->check(number_in(0, 1))
      ->capture_default_str();
  app.add_option("--crash-rank", o.crash_rank, "the rank --crash-at-step kills")
      ->check(count_in(0, 63))
      ->capture_default_str();
}

}  // namespace course
