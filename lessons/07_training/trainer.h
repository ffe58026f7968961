// trainer.h: lesson 07, the training step, an epoch of them, and evaluation.
//
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     EpochStats s = train_epoch(model, optimizer, train_loader, epoch);
//     EvalStats e = evaluate(model, test_loader);
//   }
//
// train_step is the five lines every PyTorch training loop has:
//
//   optimizer.zero_grad();                     // forget the last batch's gradients
//   logits = model.forward(inputs);            // records the graph
//   loss = cross_entropy(logits, targets);
//   loss.backward();                           // gradients into every parameter's grad()
//   optimizer.step();                          // parameters move against them
//
// train_epoch times each step with a steady clock and reads thread_matmul_stats()
// (tensor_ops.h) around it, so the driver can print where the time goes: the share of
// the step spent inside matrix-product kernels. Batch assembly is timed separately.
#pragma once

#include <cstdint>

#include "data_loader.h"
#include "module.h"
#include "optimizer.h"

namespace course {

struct StepResult {
  float loss = 0;       ///< the batch's mean cross-entropy
  int64_t correct = 0;  ///< examples whose largest logit is the target (before the update)
};

/// One optimisation step on `batch` (the five lines above).
StepResult train_step(Module& model, Optimizer& optimizer, const Batch& batch);

/// How many rows of logits [B, C] have their largest entry at targets[i].
int64_t count_correct(const Tensor& logits, const Tensor& targets);

struct EpochStats {
  double loss = 0;      ///< mean over examples
  double accuracy = 0;  ///< fraction of examples classified right, before each update
  int64_t samples = 0;
  double seconds = 0;         ///< wall time of the epoch, data loading included
  double step_seconds = 0;    ///< time inside train_step
  double matmul_seconds = 0;  ///< of which inside matrix-product kernels
  int64_t steps = 0;
};

/// Runs train_step over every batch of `loader`'s epoch `epoch`. Throws Error at the first
/// step whose loss is NaN or infinite ("the loss is nan at step 4 of epoch 1: ..."): every
/// step after it would train on it.
EpochStats train_epoch(Module& model, Optimizer& optimizer, DataLoader& loader, int64_t epoch);

struct EvalStats {
  double loss = 0;
  double accuracy = 0;
  int64_t samples = 0;
};

/// Loss and accuracy over one pass of `loader`, without recording graphs (NoGradGuard).
EvalStats evaluate(Module& model, DataLoader& loader);

}  // namespace course
