// training_options.h: what a model trains on, where and with which optimizer: the options
// and helpers lessons 07 to 11 share (given code). Their command-line flags are in
// training_flags.h.
//
//   TrainingOptions o;                         // filled by add_optimizer_flags and
//   ...                                        // add_device_flag (training_flags.h)
//   const Device device = select_device(o.device, local_rank);   // GPU LOCAL_RANK
//   move_module_to(*model, device);            // the parameters, in place
//   auto optimizer = make_optimizer(o, model->parameters());
//
// On --device cuda every rank drives GPU LOCAL_RANK (one rank per GPU); the parameters, the
// optimizer's state (created on the parameters' device), the batches (DataLoader's
// device) and DDP's buckets (on the parameters' device) live there. A build without CUDA
// or a machine without a GPU is a ConfigError naming what is missing (select_device).
//
// What this is not: a lesson exercise; nothing here is graded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mnist.h"
#include "module.h"
#include "optimizer.h"
#include "tensor.h"

namespace course {

/// The data and model flags of every training driver (lesson 07's, 08's, and lesson 09's
/// DdpTrainingOptions, which lessons 10 and 11 reuse).
struct DataOptions {
  /// A directory with the MNIST-format IDX files.
  std::string data = kFashionMnistDir;
  int epochs = 3;
  /// Examples per step: the whole batch in one process, each rank's share in DDP.
  int64_t batch_size = 128;
  /// The MLP's hidden layer sizes.
  std::vector<int64_t> hidden = {512, 512};
  uint64_t seed = 0;
  /// Train on the first `limit` examples only; 0: the whole training set.
  int64_t limit = 0;
};

/// The shared training flags (see the top of this file).
struct TrainingOptions {
  /// "cpu" or "cuda".
  std::string device = "cpu";
  /// "sgd" (with momentum) or "adam".
  std::string optimizer = "sgd";
  /// The learning rate; <= 0 picks the optimizer's default (0.05 for SGD, 1e-3 for Adam).
  float lr = -1;
  /// SGD's momentum.
  float momentum = 0.9f;
  /// The L2 penalty.
  float weight_decay = 0.0f;
};

/// Device::cpu for "cpu"; for "cuda", makes GPU `local_rank` this thread's device
/// (cuda_set_device) and returns Device::cuda. Throws ConfigError naming what is missing:
/// CUDA in the build, a GPU, or GPU `local_rank` (one rank per GPU).
Device select_device(const std::string& device, int local_rank = 0);

/// Moves every parameter of `model` to `device` in place (Tensor::move_to_), as torch's
/// model.to(device) does. Buffers stay in host memory: lesson 11's BatchNorm keeps its
/// running statistics in host code, and the nccl backend stages them when DDP broadcasts
/// them. Call it before creating the optimizer and DDP.
void move_module_to(Module& model, Device device);

/// The learning rate `o` trains with: o.lr, or its optimizer's default when o.lr <= 0.
float learning_rate(const TrainingOptions& o);

/// The optimizer `o` names, over `params`, with its defaults where `o` leaves them.
std::unique_ptr<Optimizer> make_optimizer(const TrainingOptions& o, std::vector<Variable> params);

}  // namespace course
