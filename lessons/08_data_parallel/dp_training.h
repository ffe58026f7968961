// dp_training.h: lesson 08, given: what ./lesson08 runs without --bench: the equivalence
// check of DataParallel against the serial model, then lesson 07's MLP trained through
// DataParallel with each epoch's step breakdown.
//
//   ./lesson08 --devices 2 --batch-size 512
//
// run_dp_training, in order:
//   1. self_check_data_parallel() (dp_self_check.h): uneven batches, a failing replica;
//   2. check_dp_equivalence: kDpCheckSteps SGD steps at batch --batch-size + 1 (a batch
//      the devices do not divide): DataParallel's output, every gradient and every
//      parameter afterwards equal those of the same model run serially on the whole batch,
//      within kDpTolerance relative to the tensor's largest magnitude;
//   3. training: per epoch the loss, train and test accuracy, samples/s, and the step's
//      breakdown (step_breakdown.h: replicate, scatter, forward per device, gather + loss,
//      backward per device, reduce-add, optimizer, serial share, idle device time).
// PASS needs 1 and 2, and lesson 07's test accuracy target (85% within 3 epochs).
//
// Devices are threads with one BLAS thread each (the driver sets OpenBLAS to one thread);
// device 0 is the calling thread. What this is not: a distributed run (lesson 09).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "data_parallel.h"
#include "driver.h"
#include "training_data.h"
#include "training_options.h"

namespace course {

/// ./lesson08's flags: lesson 07's data flags (--batch-size is the global batch), plus the
/// devices, SGD's learning rate and momentum, and the benchmark's time per row.
struct DpOptions : DataOptions {
  int devices = 0;  ///< 0: one per core
  float lr = 0.05f;
  float momentum = 0.9f;
  double bench_seconds = 1.5;  ///< --bench: seconds per configuration
};

/// SGD steps the equivalence check takes.
constexpr int kDpCheckSteps = 3;
/// Largest difference the equivalence check allows, relative to max(1, max |serial|): the
/// devices sum the same float terms in another order.
constexpr float kDpTolerance = 1e-4f;

/// The replicas' factory for lesson 07's MLP of `sizes` (any values: replicate()
/// overwrites them every step).
ModuleFactory mlp_replica_factory(const std::vector<int64_t>& sizes);

/// Step 2 above over `devices` devices: "" (after printing the largest difference to `out`)
/// or the first output, gradient or parameter that differs, with its step.
std::string check_dp_equivalence(const DpOptions& o, const TrainingData& d, int devices,
                                 std::ostream& out);

/// Steps 1 to 3 above over `devices` devices, printing to `out`.
Verdict run_dp_training(const DpOptions& o, int devices, std::ostream& out);

}  // namespace course
