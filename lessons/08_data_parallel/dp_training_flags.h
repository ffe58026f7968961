// dp_training_flags.h: lesson 08, given: ./lesson08's command-line flags (DpOptions,
// dp_training.h).
//
//   DpOptions o;
//   add_dp_flags(flags, o);   // lesson 07's data flags, --devices, --lr, --momentum, ...
//
// Declared through flags.h, as training_flags.h says.
#pragma once

#include "dp_training.h"
#include "flag_checks.h"
#include "flags.h"
#include "training_flags.h"

namespace course {

/// Adds add_data_flags' flags (--batch-size: the global batch), then --devices, --lr,
/// --momentum and --bench-seconds.
inline void add_dp_flags(Flags& flags, DpOptions& o) {
  add_data_flags(flags, o, "examples per step (the global batch)");
  flags.option("--devices", o.devices, "devices (threads); 0: one per core")
      .check(count_in(0, 64))
      .show_default();
  flags.option("--lr", o.lr, "SGD learning rate").show_default();
  flags.option("--momentum", o.momentum, "SGD momentum").show_default();
  flags.option("--bench-seconds", o.bench_seconds, "seconds per benchmark row").show_default();
}

}  // namespace course
