// epoch_loop.h: lesson 09, the epochs of every distributed training run of the course,
// written once: lessons 09 (and 10, 11, 14 through ddp_training.h), 13, 15 and 16 each fill
// its step seam with their own step and keep everything around the loop (data, model,
// checks, verdict) to themselves. Given.
//
//   EpochLoopSeams seams;
//   seams.step = [&](const Batch& b, const StepPosition&) {      // one optimisation step
//     return ddp_train_step(model, *optimizer, *sync, b);
//   };
//   seams.evaluate = [&] { return evaluate(model, test_loader).accuracy; };
//   seams.end_epoch = [&](const EpochSummary& e) { out << "epoch " << e.epoch << ...; };
//   EpochLoopResult r = run_epochs(*sampler, train_loader, o.epochs, seams);
//
// Every epoch, on every rank:
//   sampler.set_epoch(e); loader.start_epoch(e)   torch's ritual: a new order per epoch
//   for each batch: step(batch, position)          the lesson's step (its own finite check)
//   evaluate()                                     collective where the model is sharded
//   end_epoch(summary)                             the lesson prints its line
// An epoch with no batch at all is a ConfigError naming the sizes (a loss of 0 and an
// untrained model would otherwise look like a run).
//
// What this is not: a trainer of its own (lesson 07's trainer.h is the single-process one);
// the loop knows no model, no optimizer and no group, only batches and the seams.
#pragma once

#include <cstdint>
#include <functional>

#include "data_loader.h"
#include "distributed_sampler.h"
#include "trainer.h"

namespace course {

/// Where a step is in the run: epoch from 0, the step within the epoch and over the run.
struct StepPosition {
  int epoch = 0;
  int64_t step = 0;         ///< within the epoch, from 0
  int64_t global_step = 0;  ///< over the run, from 0
};

/// One epoch, as the loop measured it on this rank.
struct EpochSummary {
  int epoch = 1;  ///< from 1, as every lesson prints it ("epoch 1/3")
  int epochs = 1;
  double loss = 0;            ///< this rank's mean step loss, weighted by batch size
  double train_accuracy = 0;  ///< this rank's examples classified right before each update
  int64_t samples = 0;        ///< this rank's examples
  int64_t steps = 0;
  double seconds = 0;        ///< the epoch's training, evaluation not included
  double test_accuracy = 0;  ///< what evaluate() returned on this rank
};

/// The lesson's parts of the loop; step is required, the others may be empty.
struct EpochLoopSeams {
  /// One optimisation step on this rank's batch; StepResult::correct may be 0 where the
  /// step cannot count it (a pipeline's first stage).
  std::function<StepResult(const Batch&, const StepPosition&)> step;
  /// Test accuracy after each epoch, called on every rank (a sharded model's evaluation is
  /// collective); a rank that does not evaluate returns 0.
  std::function<double()> evaluate;
  /// After evaluate(), on every rank.
  std::function<void(const EpochSummary&)> end_epoch;
};

struct EpochLoopResult {
  double best_accuracy = 0;  ///< largest test_accuracy within the first scored_epochs epochs
  int best_epoch = 0;        ///< from 1; 0 when no epoch was scored
  double seconds = 0;        ///< the last epoch's training time
  int64_t samples = 0;       ///< the last epoch's examples on this rank
  int64_t steps = 0;         ///< over the run
};

/// Runs `epochs` epochs of `seams` over `loader`, whose sampler is `sampler` (set to each
/// epoch first). The best accuracy counts the first `scored_epochs` epochs only (lesson
/// 07's target is for 3 epochs). Throws ConfigError when an epoch has no batch.
EpochLoopResult run_epochs(DistributedSampler& sampler, DataLoader& loader, int epochs,
                           const EpochLoopSeams& seams, int scored_epochs);

}  // namespace course
