// training_options.cpp: see training_options.h.
#include "training_options.h"

#include "error.h"

namespace course {

Device select_device(const std::string& device, int local_rank) {
  const Device d = parse_device(device);
  if (d == Device::cuda) cuda_set_device(local_rank);
  return d;
}

void move_module_to(Module& model, Device device) {
  for (const Variable& p : model.parameters()) p.data().move_to_(device);
}

float learning_rate(const TrainingOptions& o) {
  if (o.lr > 0) return o.lr;
  return o.optimizer == "adam" ? 1e-3f : 0.05f;
}

std::unique_ptr<Optimizer> make_optimizer(const TrainingOptions& o, std::vector<Variable> params) {
  if (o.optimizer == "adam") {
    return std::make_unique<Adam>(
        std::move(params), AdamOptions{.lr = learning_rate(o), .weight_decay = o.weight_decay});
  }
  if (o.optimizer != "sgd") {
    throw ConfigError("unknown optimizer '" + o.optimizer + "': pass sgd or adam");
  }
  return std::make_unique<Sgd>(
      std::move(params),
      SgdOptions{.lr = learning_rate(o), .momentum = o.momentum, .weight_decay = o.weight_decay});
}

}  // namespace course
