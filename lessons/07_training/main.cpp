// main.cpp: ./lesson07, training an MLP on Fashion-MNIST in one process, one thread.
//
//   make lesson07 && ./lesson07                        # 784-512-512-10, SGD, 3 epochs
//   ./lesson07 --optimizer adam --lr 1e-3 --epochs 5
//   ./lesson07 --data ~/mnist --hidden 128            # plain MNIST, a smaller model
//   ./lesson07 --device cuda                          # on the GPU (docs/gpu.md)
//
// mlp_training.h: loads the data (common/data/mnist.h), standardises it with the training set's
// mean and standard deviation, builds the MLP (make_mlp), and trains with the learner's modules,
// optimizer, data loader and training step. After every epoch: one line with the loss,
// train and test accuracy, samples/s and the share of the step spent in matmul kernels.
// Finally it saves a checkpoint, loads it into a fresh model, and checks that every
// tensor and the test accuracy come back bit for bit.
//
// PASS needs test accuracy >= 85% after at most 3 epochs and, at batch 128 with SGD (the
// defaults), matmul kernels >= 75% of the training step's time.
#include <iostream>

#include "driver.h"
#include "flags.h"
#include "mlp_training.h"
#include "training_flags.h"

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson07";
  config.title = "training: modules, SGD and Adam, a data loader, Fashion-MNIST, checkpoints";
  config.distributed = false;
  course::MlpTrainingOptions o;
  return course::run_driver(
      argc, argv, config,
      [&](course::Flags& flags) {
        course::add_data_flags(flags, o, "examples per step");
        course::add_optimizer_flags(flags, o.training);
        course::add_device_flag(flags, o.training.device);
        flags
            .option("--checkpoint", o.checkpoint,
                    "keep the final checkpoint at this path (default: a temporary file)")
            .check(course::writable(course::OutputPath::kFile));
      },
      [&](course::DriverContext&) { return course::run_mlp_training(o, std::cout); });
}
