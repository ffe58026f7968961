// dp_training_flags.h: lesson 08, given: ./lesson08's command-line flags (DpOptions,
// dp_training.h).
//
//   DpOptions o;
//   add_dp_flags(app, o);   // lesson 07's data flags, --devices, --lr, --momentum, ...
//
// Inline, as training_flags.h says why: only main.cpp compiles CLI11's header for them.
#pragma once

#include <CLI/CLI.hpp>

#include "dp_training.h"
#include "flag_checks.h"
#include "training_flags.h"

namespace course {

/// Adds add_data_flags' flags (--batch-size: the global batch), then --devices, --lr,
/// --momentum and --bench-seconds.
inline void add_dp_flags(CLI::App& app, DpOptions& o) {
  add_data_flags(app, o, "examples per step (the global batch)");
  app.add_option("--devices", o.devices, "devices (threads); 0: one per core")
      ->check(count_in(0, 64))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "SGD learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--bench-seconds", o.bench_seconds, "seconds per benchmark row")
      ->capture_default_str();
}

}  // namespace course
