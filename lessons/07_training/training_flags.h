// training_flags.h: the command-line flags of training_options.h, which the drivers of
// lessons 07 to 11 share (given code).
//
//   DataOptions d;
//   add_data_flags(app, d, "examples per step");   // --data, --epochs, --batch-size, --hidden,
//                                                  // --seed, --limit
//   TrainingOptions o;
//   add_device_flag(app, o.device);            // --device cpu|cuda
//   add_optimizer_flags(app, o);               // --optimizer, --lr, --momentum, --weight-decay
//
// The functions are defined here, inline, so that only the drivers' main.cpp files, which
// declare their flags with CLI11 anyway, compile CLI11's header for them: it costs seconds
// of compile time in every file that includes it, and the training code needs none of it.
//
// What this is not: a lesson exercise; nothing here is graded.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "flag_checks.h"
#include "training_options.h"

namespace course {

/// Adds --data, --epochs, --batch-size (described by `batch_help`), --hidden, --seed
/// (described by `seed_help`) and --limit, with their range checks (flag_checks.h).
inline void add_data_flags(CLI::App& app, DataOptions& o, const std::string& batch_help,
                           const std::string& seed_help = "seed for initialisation and shuffling") {
  app.add_option("--data", o.data, "directory with the MNIST-format IDX files")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "passes over the training set")
      ->check(count_in(1, 1000))
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, batch_help)
      ->check(count_in(1, 60000))
      ->capture_default_str();
  app.add_option("--hidden", o.hidden, "hidden layer sizes, e.g. --hidden 512 512")
      ->check(count_in(1, 65536))
      ->expected(1, 16);
  app.add_option("--seed", o.seed, seed_help)->capture_default_str();
  app.add_option("--limit", o.limit, "train on the first N examples only (0: all)")
      ->check(count_in(0, INT64_MAX));
}

/// Adds --device cpu|cuda, stored in `device`.
inline void add_device_flag(CLI::App& app, std::string& device) {
  app.add_option("--device", device,
                 "where the model trains: cpu, or cuda (GPU LOCAL_RANK; see docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

/// Adds --optimizer, --lr, --momentum and --weight-decay.
inline void add_optimizer_flags(CLI::App& app, TrainingOptions& o) {
  app.add_option("--optimizer", o.optimizer, "sgd (momentum) or adam")
      ->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate (default 0.05 for sgd, 1e-3 for adam)")
      ->check(positive_number());
  app.add_option("--momentum", o.momentum, "SGD momentum")
      ->check(number_in(0, 1))
      ->capture_default_str();
  app.add_option("--weight-decay", o.weight_decay, "L2 penalty")
      ->check(number_in(0, 1))
      ->capture_default_str();
}

}  // namespace course
