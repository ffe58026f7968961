// step_breakdown.cpp: lesson 08, the timed training step (given; see step_breakdown.h).
#include "step_breakdown.h"

#include <algorithm>
#include <chrono>

#include "bench_table.h"
#include "data_parallel_times.h"
#include "error.h"
#include "ops.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;
}  // namespace

StepBreakdown::StepBreakdown(int devices)
    : devices(devices), forward_busy(devices, 0.0), backward_busy(devices, 0.0) {}

double StepBreakdown::serial_share() const {
  return total > 0 ? serial() / total : 0;
}

double StepBreakdown::idle_share() const {
  if (total <= 0 || devices == 0) return 0;
  double busy = serial();
  for (int k = 0; k < devices; ++k) busy += forward_busy[k] + backward_busy[k];
  return std::max(0.0, 1.0 - busy / (devices * total));
}

double StepBreakdown::ms(double seconds) const {
  return 1e3 * seconds / static_cast<double>(std::max<int64_t>(steps, 1));
}

StepResult timed_train_step(DataParallel& dp, Optimizer& optimizer, const Batch& batch,
                            StepBreakdown& b) {
  if (b.devices != dp.devices()) {
    throw ConfigError("timed_train_step: a breakdown for " + std::to_string(b.devices) +
                      " devices, a DataParallel over " + std::to_string(dp.devices()));
  }
  const auto start = Clock::now();
  optimizer.zero_grad();
  const double zero_grad = seconds_since(start);
  const Variable logits = dp.forward(Variable(batch.inputs));
  auto t = Clock::now();
  const Variable loss = cross_entropy(logits, batch.targets);
  const double loss_forward = seconds_since(t);
  t = Clock::now();
  loss.backward();
  const double backward_call = seconds_since(t);
  t = Clock::now();
  optimizer.step();
  const double step = seconds_since(t);
  b.total += seconds_since(start);

  const DataParallelTimes& d = dp.times();
  b.replicate += d.replicate;
  b.scatter += d.scatter;
  b.forward += d.forward;
  b.backward += d.backward;
  b.reduce_add += d.reduce_add;
  // The loss's own backward (log-softmax, NLL) runs on device 0 before GatherBackward.
  b.gather_loss += d.gather + loss_forward + (backward_call - d.backward - d.reduce_add);
  b.optimizer += zero_grad + step;
  for (int k = 0; k < b.devices; ++k) {
    b.forward_busy[k] += d.forward_busy[k];
    b.backward_busy[k] += d.backward_busy[k];
  }
  b.steps += 1;
  return {loss.item(), count_correct(logits.data(), batch.targets)};
}

std::string breakdown_lines(const StepBreakdown& b, const std::string& indent) {
  const auto per_device = [&](const std::vector<double>& busy) {
    std::string s;
    for (size_t k = 0; k < busy.size(); ++k) s += (k ? "/" : "") + format_fixed(b.ms(busy[k]), 1);
    return s;
  };
  return indent + "per step (ms): replicate " + format_fixed(b.ms(b.replicate), 2) + ", scatter " +
         format_fixed(b.ms(b.scatter), 2) + ", forward " + format_fixed(b.ms(b.forward), 1) +
         " [devices " + per_device(b.forward_busy) + "], gather+loss " +
         format_fixed(b.ms(b.gather_loss), 2) + ", backward " + format_fixed(b.ms(b.backward), 1) +
         " [devices " + per_device(b.backward_busy) + "], reduce-add " +
         format_fixed(b.ms(b.reduce_add), 2) + ", optimizer " + format_fixed(b.ms(b.optimizer), 2) +
         "; total " + format_fixed(b.ms(b.total), 1) + "\n" + indent +
         "device 0 alone (serial): " + format_fixed(100 * b.serial_share(), 1) +
         "% of the step; idle: " + format_fixed(100 * b.idle_share(), 1) +
         "% of all devices' time\n";
}

}  // namespace course
