// ddp_training_flags.h: lesson 09, given: the command-line flags of ddp_training.h's
// DdpTrainingOptions, which the drivers of lessons 09, 10 and 11 share.
//
//   DdpTrainingOptions o;
//   add_ddp_training_flags(flags, o);   // lesson 07's flags, --init, --checkpoint, ...
//   add_target_flag(flags, o);          // --target (lessons 09 and 10)
//
// Declared through flags.h, as training_flags.h says.
#pragma once

#include <cstdint>
#include <string>

#include "ddp_training.h"
#include "flag_checks.h"
#include "flags.h"
#include "training_flags.h"

namespace course {

/// What --init's help says where rank 0 loads the file and broadcasts it (lessons 09-14).
inline constexpr const char* kInitRankZeroHelp =
    "safetensors state dict to start from (rank 0 loads it)";

/// Adds the options of DdpTrainingOptions, except --target, to a driver's flags.
/// `init_help`: what --init does in this lesson (who reads the file).
inline void add_ddp_training_flags(Flags& flags, DdpTrainingOptions& o,
                                   const std::string& init_help = kInitRankZeroHelp) {
  add_data_flags(flags, o, "examples per step on each rank",
                 "seed for initialisation (plus the rank) and shuffling");
  add_optimizer_flags(flags, o);
  add_device_flag(flags, o.device);
  flags.option("--init", o.init, init_help);
  flags.option("--checkpoint", o.checkpoint, "rank 0 writes the final state dict here")
      .check(writable(OutputPath::kFile));
  flags.flag(
      "--no-shuffle", [&o] { o.shuffle = false; }, "visit the examples in file order every epoch");
  flags.flag("--detect-anomaly", o.detect_anomaly,
             "stop at the first NaN or infinite gradient, naming the parameter (slower)");
}

/// Adds --target (lessons 09 and 10; the capstone has its own, for its final accuracy).
inline void add_target_flag(Flags& flags, DdpTrainingOptions& o) {
  flags
      .option("--target", o.target,
              "test accuracy (0..1) PASS needs within 3 epochs; lower it for short runs")
      .check(number_in(0.0, 1.0))
      .show_default();
}

}  // namespace course
