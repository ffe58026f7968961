// mlp_training.h: lesson 07, given: what ./lesson07 runs: lesson 07's MLP trained on
// Fashion-MNIST in one process, one thread, with your modules, optimizer, data loader and
// training step, then a checkpoint round trip.
//
//   ./lesson07 --optimizer adam --lr 1e-3 --epochs 5
//
// run_mlp_training loads the data (training_data.h: standardised with the training set's
// mean and standard deviation), builds the MLP (make_mlp), and trains; after every epoch
// it prints the loss, train and test accuracy, samples/s and the share of the step spent
// in matmul kernels. Then it saves a checkpoint, loads it into a fresh model and optimizer,
// and checks that every tensor and the test accuracy come back bit for bit.
//
// PASS needs test accuracy >= 85% after at most 3 epochs and, at batch 128 with SGD on the
// CPU (the defaults), matmul kernels >= 75% of the training step's time.
//
// What this is not: the data-parallel loop (lesson 09's ddp_training.h).
#pragma once

#include <ostream>
#include <string>

#include "driver.h"
#include "training_options.h"

namespace course {

/// ./lesson07's flags.
struct MlpTrainingOptions : DataOptions {  ///< --data, --epochs, --batch-size, ...
  TrainingOptions training;                ///< --device and the optimizer flags
  /// Keep the final checkpoint here ("": a temporary file, removed after the check).
  std::string checkpoint;
};

/// The run above, printing to `out`. Sets OpenBLAS to one thread (the targets are for one).
Verdict run_mlp_training(const MlpTrainingOptions& o, std::ostream& out);

}  // namespace course
