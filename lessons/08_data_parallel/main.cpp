// main.cpp: ./lesson08, lesson 07's MLP trained through DataParallel, with worker threads
// as the devices, and where each step's time goes.
//
//   make lesson08 && ./lesson08                   # all cores as devices, 3 epochs, batch 128
//   ./lesson08 --devices 2 --batch-size 512
//   ./lesson08 --bench                            # one thread vs DataParallel over 1, 2, ...
//
// Self-check (dp_training.h): first the equivalence, on a few real batches: DataParallel's output,
// every gradient, and the parameters after SGD steps equal those of the same model run serially on
// the whole batch (within a float tolerance). Then training: per epoch, accuracy, samples/s and the
// step's breakdown: replicate, scatter, forward per device, gather + loss, backward per device,
// reduce-add, optimizer, how much of the step device 0 runs alone (serial) and how much device time
// sits idle. PASS needs the equivalence and the test accuracy target of lesson 07 (>= 85% within 3
// epochs). --bench: dp_bench.h.
//
// Devices are threads with one BLAS thread each; device 0 is this thread.
#include <cblas.h>

#include <algorithm>
#include <iostream>
#include <thread>

#include "dp_bench.h"
#include "dp_training.h"
#include "dp_training_flags.h"
#include "driver.h"
#include "flags.h"

namespace {

course::Verdict run(const course::DpOptions& o, const course::DriverContext& ctx) {
  openblas_set_num_threads(1);  // one BLAS thread per device
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (ctx.args().bench) {
    return course::run_dp_bench(o, o.devices > 0 ? o.devices : std::max(2, cores), ctx.bench_csv(),
                                std::cout);
  }
  return course::run_dp_training(o, o.devices > 0 ? o.devices : cores, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson08";
  config.title = "DataParallel: replicate, scatter, parallel_apply, gather, on threads";
  config.distributed = false;
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson08_dp.csv";
  course::DpOptions o;
  return course::run_driver(
      argc, argv, config, [&](course::Flags& flags) { course::add_dp_flags(flags, o); },
      [&](course::DriverContext& ctx) { return run(o, ctx); });
}
