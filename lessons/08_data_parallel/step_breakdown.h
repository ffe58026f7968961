// step_breakdown.h: lesson 08, lesson 07's training step on a DataParallel, timed phase by
// phase (given; the driver and its benchmark print it, lesson 09 compares against it).
//
//   StepBreakdown b(dp.devices());
//   while (auto batch = loader.next()) timed_train_step(dp, optimizer, *batch, b);
//   std::cout << breakdown_lines(b, "  ");
//   // per step (ms): replicate 0.96, scatter 0.00, forward 15.0 [devices 2.4/2.0], ...
//   // device 0 alone (serial): 8.9% of the step; idle: 79.2% of all devices' time
//
// The phases inside DataParallel come from its times() (data_parallel_times.h); the loss
// and the optimizer are timed here. What counts as what:
//   serial   everything outside the replicas' forward and backward: it runs on device 0
//            while the other devices wait (replicate, scatter, gather, the loss and its
//            own backward, reduce-add, zero_grad, the optimizer step);
//   idle     device time with nothing to do: device 0 is busy in the serial phases and
//            in its own replica's work, device k > 0 only in its replica's work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data_loader.h"
#include "data_parallel.h"
#include "optimizer.h"
#include "trainer.h"

namespace course {

/// Seconds summed over steps, per phase.
struct StepBreakdown {
  int devices = 0;
  int64_t steps = 0;
  double total = 0, replicate = 0, scatter = 0, forward = 0, gather_loss = 0, backward = 0,
         reduce_add = 0, optimizer = 0;
  std::vector<double> forward_busy, backward_busy;  ///< per device

  explicit StepBreakdown(int devices = 0);
  /// Seconds of the steps outside the replicas' forward and backward.
  double serial() const { return total - forward - backward; }
  /// serial() / total.
  double serial_share() const;
  /// The share of all devices' time (devices x total) with nothing to do.
  double idle_share() const;
  /// Milliseconds per step of `seconds` summed over the steps.
  double ms(double seconds) const;
};

/// zero_grad, forward, cross_entropy, backward, step (lesson 07's train_step) on `dp`,
/// adding each phase's time into `b`. Returns the loss and the number classified right.
/// REQUIRES: b.devices == dp.devices().
StepResult timed_train_step(DataParallel& dp, Optimizer& optimizer, const Batch& batch,
                            StepBreakdown& b);

/// Two lines, each starting with `indent`: the milliseconds per step of every phase
/// (busy time per device in brackets), then the serial and idle shares.
std::string breakdown_lines(const StepBreakdown& b, const std::string& indent = "");

}  // namespace course
