// trainer_given.cpp: lesson 07, given: count_correct, the epoch loop around train_step
// (the exercise, trainer.cpp) and evaluate.
#include <chrono>
#include <cmath>
#include <string>

#include "clock.h"
#include "error.h"
#include "ops.h"
#include "tensor_ops.h"
#include "trainer.h"

namespace course {

int64_t count_correct(const Tensor& logits, const Tensor& targets) {
  const std::vector<float> predicted = argmax_rows(logits).to_vector();
  const std::vector<float> wanted = targets.to_vector();
  int64_t correct = 0;
  for (size_t i = 0; i < predicted.size(); ++i) correct += predicted[i] == wanted[i] ? 1 : 0;
  return correct;
}

EpochStats train_epoch(Module& model, Optimizer& optimizer, DataLoader& loader, int64_t epoch) {
  using Clock = std::chrono::steady_clock;
  EpochStats stats;
  double loss_sum = 0;
  int64_t correct = 0;
  const auto epoch_start = Clock::now();
  loader.start_epoch(epoch);
  while (std::optional<Batch> batch = loader.next()) {
    const double matmul_before = thread_matmul_stats().seconds;
    const auto step_start = Clock::now();
    const StepResult r = train_step(model, optimizer, *batch);
    if (!std::isfinite(r.loss)) {
      throw Error("the loss is " + std::string(std::isnan(r.loss) ? "nan" : "inf") + " at step " +
                  std::to_string(stats.steps + 1) + " of epoch " + std::to_string(epoch + 1) +
                  ": training stopped at the first non-finite value. Lower --lr, check the data");
    }
    stats.step_seconds += seconds_since(step_start);
    stats.matmul_seconds += thread_matmul_stats().seconds - matmul_before;
    const int64_t b = batch->targets.numel();
    loss_sum += static_cast<double>(r.loss) * b;
    correct += r.correct;
    stats.samples += b;
    stats.steps += 1;
  }
  stats.seconds = seconds_since(epoch_start);
  if (stats.samples > 0) {
    stats.loss = loss_sum / stats.samples;
    stats.accuracy = static_cast<double>(correct) / stats.samples;
  }
  return stats;
}

EvalStats evaluate(Module& model, DataLoader& loader) {
  NoGradGuard no_grad;
  EvalStats stats;
  double loss_sum = 0;
  int64_t correct = 0;
  loader.start_epoch(0);
  while (std::optional<Batch> batch = loader.next()) {
    const Variable logits = model.forward(Variable(batch->inputs));
    const int64_t b = batch->targets.numel();
    loss_sum += static_cast<double>(cross_entropy(logits, batch->targets).item()) * b;
    correct += count_correct(logits.data(), batch->targets);
    stats.samples += b;
  }
  if (stats.samples > 0) {
    stats.loss = loss_sum / stats.samples;
    stats.accuracy = static_cast<double>(correct) / stats.samples;
  }
  return stats;
}

}  // namespace course
