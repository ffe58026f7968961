// tp_bench.h: lesson 15, given: when tensor parallelism pays against data parallelism,
// measured beside a cost model.
//
//   ./lesson15 --bench --np 4                     # loopback
//   ./lesson15 --bench --np 4 --link 10gbit       # an emulated 10 Gbit/s link, 20 us
//
// THE ROWS. For T = 1 (lesson 10's DDP over all N ranks), 2 (a 2D grid, D = N/2) and N,
// and per-rank batches b (each rank's share of the global batch N b, so every row trains
// on the same examples per step: a TP group of T ranks runs T b examples): the slowest
// rank's median step (Adam), the bytes rank 0 sent per step (tcp_bytes_sent) and the
// model state per rank (parameters, gradients, Adam's two moments, counted from the
// tensors) and the peak of every tensor of the process during a step.
//
// THE COST MODEL (docs/cost_models.md), per rank and step, with Ψ the model's parameters,
// Ψr the replicated ones (the input layer, each fc2 bias), H the width, K the blocks:
//   compute   6 b (Ψ + (T-1) Ψr) / F          every rank of a TP group runs the replicated
//                                              input layer on all T b examples
//   TP        (2K+1) AR(T b H) + AR(T b) + AR(2 T b) over T ranks
//   DP        AR(state of a shard) over D ranks, in lesson 10's buckets
//   AR(n)     2(g-1) α + 2(g-1)/g 4n / β      the ring on g ranks (lesson 05)
// F (flop/s per rank, all ranks busy at once), α and β are measured at the start of the
// run on the same ranks and link. Bytes sent: each ring's exact payload (its segments),
// plus each call's framing, measured once per group with one all-reduce. DP's cost does
// not grow with b, TP's does: TP wins at small batches, DDP at large ones. The crossover,
// the b where the two lines meet, is printed measured (interpolated between the sweep's
// batches) and predicted.
//
// What this is not: a GPU or NVLink measurement: on one 2-core machine N ranks share the
// cores, so compute per rank is what the cores give N busy processes.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "driver.h"
#include "process_group.h"
#include "subgroups.h"
#include "tp_training.h"

namespace course {

struct TpBenchOptions {
  std::vector<int64_t> batches = {4, 16, 64, 256, 1024};  ///< per-rank batch b
  int warmup = 2;
  int steps = 9;
  std::string csv_path = "bench-results/lesson15_tp.csv";  ///< rank 0 writes the rows here
};

/// The bytes rank `rank` sends in a ring all-reduce of `count` floats over `g` ranks
/// (lesson 05's segments: the first count % g are one longer): every segment once in
/// the reduce-scatter but seg(r+1), every one once in the all-gather but seg(r+2).
int64_t ring_all_reduce_bytes(int64_t count, int g, int rank);

/// The measured table (printed, and written to bench.csv_path) and the crossovers (see the
/// top of this file); each T's grid is a
/// device mesh ({"dp", N / T}, {"tp", T}, tp_mesh_dims) made through `subgroups`, one per
/// row of the sweep (a driver's mesh fixes one T). Collective over `world`. PASS when every row
/// left its replicas equal.
Verdict run_tp_bench(const TpTrainingOptions& o, ProcessGroup& world, Subgroups& subgroups,
                     const TpBenchOptions& bench, std::ostream& out);

}  // namespace course
