// sharding_bench.h: lesson 13, given: ./lesson13 --bench.
//
//   run_sharding_bench(*group, bench, std::cout);          // ./lesson13 --bench
//
// THE BENCHMARK (run_sharding_bench): lesson 10's bench model (ddp_bench_sizes: 784 ->
// hidden x layers -> 10) with Adam on a synthetic batch; one row per stage, DDP (lesson
// 10, gradients as bucket views) first; each row built, warmed up and timed alone, so that
// its memory is its own. Per row: peak bytes per rank of model state (the ledger; DDP's
// counted from its buffers) and the model's figure, every tensor measured, values sent per
// step (tcp) and modelled, the slowest rank's median step and its ratio to DDP. Then the
// ring's halves beside the whole ring on 1, 16 and 64 MiB, in nccl-tests' columns
// (collective_bench.h: time, algbw and busbw, factors (N-1)/N for reduce-scatter and
// all-gather, 2(N-1)/N for all-reduce).
#pragma once

#include <ostream>

#include "ddp_bench.h"
#include "driver.h"
#include "process_group.h"

namespace course {

/// The table above (every rank calls it; rank 0 prints to `out`). PASS when every row left
/// identical parameters on every rank.
Verdict run_sharding_bench(ProcessGroup& group, const DdpBenchOptions& options, std::ostream& out);

}  // namespace course
