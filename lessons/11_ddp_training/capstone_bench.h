// capstone_bench.h: lesson 11's benchmark, `./lesson11 --bench --np N`: training
// throughput of N ranks against one process at the same per-rank batch, both measured in
// the same run (given).
//
//   rank 0 alone: `steps` steps of the capstone's model at batch B, no communication
//                 (the other ranks wait at a barrier, so rank 0 has the machine)
//   all N ranks:  `steps` DDP steps at batch B per rank (SyncBatchNorm with --sync-bn)
//   speedup = (N * steps * B / slowest rank's time) / (steps * B / rank 0's alone time)
//
// On N cores with a perfect network the speedup is N; the gap is gradient all-reduce time
// (plus SyncBatchNorm's two small collectives per layer) and the machine's other load.
//
// What this is not: a sweep over N (run it once per N), or a GPU benchmark.
#pragma once
#include <ostream>
#include <string>

#include "capstone.h"

namespace course {

struct CapstoneBenchOptions {
  int steps = 100;  ///< timed steps in each phase (after 5 warm-up steps)
  std::string csv_path = "bench-results/lesson11_capstone.csv";  ///< rank 0 writes the table
};

/// Collective. Prints the table on rank 0 and writes it to bench.csv_path; returns a PASS
/// carrying the figures.
Verdict run_capstone_bench(const CapstoneOptions& o, const CapstoneBenchOptions& bench,
                           ProcessGroup& pg, ProcessGroup& bn_group, std::ostream& out);

}  // namespace course
