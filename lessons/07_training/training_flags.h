// training_flags.h: the command-line flags of training_options.h, which the drivers of
// lessons 07 to 11 share (given code).
//
//   DataOptions d;
//   add_data_flags(flags, d, "examples per step");  // --data, --epochs, --batch-size,
//                                                   // --hidden, --seed, --limit
//   TrainingOptions o;
//   add_device_flag(flags, o.device);   // --device cpu|cuda
//   add_optimizer_flags(flags, o);      // --optimizer, --lr, --momentum, --weight-decay
//
// The flags are declared through common/runtime/flags.h, whose flags.cpp is the one file
// that compiles CLI11's header: it costs seconds of compile time and half a minute of
// clang-tidy in every file that includes it. The training code needs none of this.
//
// What this is not: a lesson exercise; nothing here is graded.
#pragma once

#include <cstdint>
#include <string>

#include "flag_checks.h"
#include "flags.h"
#include "training_options.h"

namespace course {

/// Adds --data, --epochs, --batch-size (described by `batch_help`), --hidden, --seed
/// (described by `seed_help`) and --limit, with their range checks (flag_checks.h).
inline void add_data_flags(Flags& flags, DataOptions& o, const std::string& batch_help,
                           const std::string& seed_help = "seed for initialisation and shuffling") {
  flags.option("--data", o.data, "directory with the MNIST-format IDX files")
      .show_default()
      .may_differ_across_ranks();  // each machine keeps it at its own place
  flags.option("--epochs", o.epochs, "passes over the training set")
      .check(count_in(1, 1000))
      .show_default();
  flags.option("--batch-size", o.batch_size, batch_help).check(count_in(1, 60000)).show_default();
  flags.option("--hidden", o.hidden, "hidden layer sizes, e.g. --hidden 512 512")
      .check(count_in(1, 65536))
      .values(1, 16);
  flags.option("--seed", o.seed, seed_help).show_default();
  flags.option("--limit", o.limit, "train on the first N examples only (0: all)")
      .check(count_in(0, INT64_MAX));
}

/// Adds --device cpu|cuda, stored in `device`.
inline void add_device_flag(Flags& flags, std::string& device) {
  flags
      .option("--device", device,
              "where the model trains: cpu, or cuda (GPU LOCAL_RANK; see docs/gpu.md)")
      .check(one_of({"cpu", "cuda"}))
      .show_default();
}

/// Adds --optimizer, --lr, --momentum and --weight-decay.
inline void add_optimizer_flags(Flags& flags, TrainingOptions& o) {
  flags.option("--optimizer", o.optimizer, "sgd (momentum) or adam")
      .check(one_of({"sgd", "adam"}))
      .show_default();
  flags.option("--lr", o.lr, "learning rate (default 0.05 for sgd, 1e-3 for adam)")
      .check(positive_number())
      .compare_as([&o] { return flag_number_text(learning_rate(o)); });  // the rate used
  flags.option("--momentum", o.momentum, "SGD momentum").check(number_in(0, 1)).show_default();
  flags.option("--weight-decay", o.weight_decay, "L2 penalty")
      .check(number_in(0, 1))
      .show_default();
}

}  // namespace course
