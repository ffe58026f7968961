// ddp_training_flags.h: lesson 09, given: the command-line flags of ddp_training.h's
// DdpTrainingOptions, which the drivers of lessons 09, 10 and 11 share.
//
//   DdpTrainingOptions o;
//   add_ddp_training_flags(app, o);   // lesson 07's flags, --init, --checkpoint, ...
//   add_target_flag(app, o);          // --target (lessons 09 and 10)
//
// Inline, as training_flags.h says why: only the drivers' main.cpp compile CLI11's header
// for them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

#include "ddp_training.h"
#include "flag_checks.h"
#include "training_flags.h"

namespace course {

/// Adds the options of DdpTrainingOptions, except --target, to a driver's CLI11 app.
inline void add_ddp_training_flags(CLI::App& app, DdpTrainingOptions& o) {
  add_data_flags(app, o, "examples per step on each rank",
                 "seed for initialisation (plus the rank) and shuffling");
  add_optimizer_flags(app, o);
  add_device_flag(app, o.device);
  app.add_option("--init", o.init, "safetensors state dict to start from (rank 0 loads it)");
  app.add_option("--checkpoint", o.checkpoint, "rank 0 writes the final state dict here");
  app.add_flag(
      "--no-shuffle", [&o](int64_t) { o.shuffle = false; },
      "visit the examples in file order every epoch");
  app.add_flag("--detect-anomaly", o.detect_anomaly,
               "stop at the first NaN or infinite gradient, naming the parameter (slower)");
}

/// Adds --target (lessons 09 and 10; the capstone has its own, for its final accuracy).
inline void add_target_flag(CLI::App& app, DdpTrainingOptions& o) {
  app.add_option("--target", o.target,
                 "test accuracy (0..1) PASS needs within 3 epochs; lower it for short runs")
      ->check(number_in(0.0, 1.0))
      ->capture_default_str();
}

}  // namespace course
