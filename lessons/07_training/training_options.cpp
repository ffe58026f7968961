// training_options.cpp: see training_options.h.
#include "training_options.h"

#include <CLI/CLI.hpp>

#include "error.h"
#include "flag_checks.h"

namespace course {

void add_data_flags(CLI::App& app, DataOptions& o, const std::string& batch_help,
                    const std::string& seed_help) {
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

void add_device_flag(CLI::App& app, std::string& device) {
  app.add_option("--device", device,
                 "where the model trains: cpu, or cuda (GPU LOCAL_RANK; see docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
}

void add_optimizer_flags(CLI::App& app, TrainingOptions& o) {
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

Device select_device(const std::string& device, int local_rank) {
  const Device d = parse_device(device);
  if (d == Device::cuda) cuda_set_device(local_rank);
  return d;
}

void move_module_to(Module& model, Device device) {
  for (const Variable& p : model.parameters()) p.data().move_to_(device);
}

std::unique_ptr<Optimizer> make_optimizer(const TrainingOptions& o, std::vector<Variable> params) {
  if (o.optimizer == "adam") {
    return std::make_unique<Adam>(std::move(params), AdamOptions{.lr = o.lr > 0 ? o.lr : 1e-3f,
                                                                 .weight_decay = o.weight_decay});
  }
  if (o.optimizer != "sgd") {
    throw ConfigError("unknown optimizer '" + o.optimizer + "': pass sgd or adam");
  }
  return std::make_unique<Sgd>(std::move(params), SgdOptions{.lr = o.lr > 0 ? o.lr : 0.05f,
                                                             .momentum = o.momentum,
                                                             .weight_decay = o.weight_decay});
}

}  // namespace course
