// epoch_loop.cpp: see epoch_loop.h.
#include "epoch_loop.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "clock.h"
#include "error.h"

namespace course {

EpochLoopResult run_epochs(DistributedSampler& sampler, DataLoader& loader, int epochs,
                           const EpochLoopSeams& seams, int scored_epochs) {
  if (!seams.step) throw Error("run_epochs: the step seam is empty");
  EpochLoopResult result;
  int64_t global_step = 0;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    sampler.set_epoch(epoch);
    loader.start_epoch(epoch);
    if (loader.num_batches() == 0) {
      throw ConfigError("epoch " + std::to_string(epoch + 1) + " has no batch on rank " +
                        std::to_string(sampler.rank()) + " of " +
                        std::to_string(sampler.num_replicas()) + ": its share of the " +
                        std::to_string(loader.dataset().size()) + " training examples is " +
                        std::to_string(sampler.num_samples()) + ", fewer than one batch of " +
                        std::to_string(loader.batch_size()) +
                        " (a short last batch is dropped): raise --limit or lower --batch-size");
    }
    const auto start = std::chrono::steady_clock::now();
    EpochSummary s;
    s.epoch = epoch + 1;
    s.epochs = epochs;
    double loss_sum = 0;
    int64_t correct = 0;
    while (std::optional<Batch> batch = loader.next()) {
      const StepResult r = seams.step(*batch, StepPosition{epoch, s.steps, global_step});
      const int64_t b = batch->targets.numel();
      loss_sum += static_cast<double>(r.loss) * static_cast<double>(b);
      correct += r.correct;
      s.samples += b;
      s.steps += 1;
      global_step += 1;
    }
    s.seconds = seconds_since(start);
    const double samples = static_cast<double>(std::max<int64_t>(s.samples, 1));
    s.loss = loss_sum / samples;
    s.train_accuracy = static_cast<double>(correct) / samples;
    s.test_accuracy = seams.evaluate ? seams.evaluate() : 0.0;
    if (epoch < scored_epochs && s.test_accuracy > result.best_accuracy) {
      result.best_accuracy = s.test_accuracy;
      result.best_epoch = s.epoch;
    }
    result.seconds = s.seconds;
    result.samples = s.samples;
    if (seams.end_epoch) seams.end_epoch(s);
  }
  result.steps = global_step;
  return result;
}

}  // namespace course
