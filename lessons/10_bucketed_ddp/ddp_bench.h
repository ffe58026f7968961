// ddp_bench.h: lesson 10's benchmark, the DDP paper's experiments in miniature (given code).
//
//   ./lesson10 --bench --np 2            # the table, bench-results/lesson10_buckets.csv/.svg
//
// On an MLP wide enough that communication matters (784 -> 2048 x 4 -> 10, 14.2 M
// parameters, 57 MB of gradients), every rank times training steps of the same per-rank
// batch under each way of synchronising gradients:
//
//   compute only        no communication at all (every rank trains alone): the floor
//   naive per-param     after backward, one blocking all_reduce per parameter
//   naive flat          after backward, copy into one buffer, one all_reduce, copy back
//   bucketed <cap>      the Reducer, buckets of at most <cap> (first bucket the same),
//                       for per-parameter, 0.25, 1, 5, 25 MiB and one bucket
//   bucketed default    the Reducer with torch's defaults: 1 MiB first bucket, 25 MiB cap
//   no_sync K           the default Reducer, K - 1 micro-batches under no_sync, then one
//                       synchronised (K = 2, 4, 8; K = 1 is "bucketed default"): time per
//                       micro-batch
//
// and one flat all_reduce of every gradient alone (the communication there is to hide).
// Every row has its own model, all alive at once, and the timed steps are interleaved:
// round r runs step r of every row in turn, so a shared machine's drifting load falls on
// every row alike. Each row is the median over the rounds of the slowest rank, and its
// ratio to compute only. The hidden share is 1 - (t_row - t_compute) / t_allreduce: the
// part of the all-reduce time that did not add to the step.
//
// --bench-hidden and --bench-layers change the model: 256 x 48 has 98 small parameters,
// enough for the per-call cost n_b·o to turn the sweep up (the README's deep-model table).
//
// What this is not: a training run (the inputs are synthetic; the numbers learn nothing).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "driver.h"
#include "process_group.h"
#include "tensor.h"

namespace course {

struct DdpBenchOptions {
  int64_t batch_size = 32;  ///< per rank
  int hidden = 2048;
  int layers = 4;
  int warmup = 2;
  int steps = 5;
  std::string csv_path = "bench-results/lesson10_buckets.csv";
  std::string svg_path = "bench-results/lesson10_buckets.svg";
};

/// Runs the table above on `group` (every rank calls it). Returns the verdict: PASS when
/// every bucketed run left identical parameters on every rank.
Verdict run_ddp_bench(ProcessGroup& group, const DdpBenchOptions& options);

}  // namespace course
