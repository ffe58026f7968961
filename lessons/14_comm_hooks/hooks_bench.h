// hooks_bench.h: lesson 14, given: ./lesson14 --bench.
//
//   run_hooks_bench(*group, bench, std::cout);                // ./lesson14 --bench
//
// THE BENCHMARK (run_hooks_bench): lesson 10's bench model (784 -> 2048 x 4 -> 10,
// 14.2 M parameters), a synthetic batch per rank, one DDP (default buckets) per row, every
// row alive and the rounds interleaved, as lesson 10's: no hook; fp16; bf16; PowerSGD
// ranks 1, 2 and 4 (start_iter 0: compressing from the first step). Per row: the slowest
// rank's median step, its speed-up over no hook, the bytes this rank handed to its tcp
// sockets per step (tcp_bytes_sent) and the model's figure beside them: a float32
// all-reduce moves 2(N-1)/N * 4 bytes per value, the half all-reduce 2(N-1)/N * 2, and
// PowerSGD's per bucket its uncompressed values plus r(n + m) per matrix, as floats.
//
// What this is not: a training run (the bench's inputs learn nothing; ./lesson14 without
// --bench trains Fashion-MNIST).
#pragma once

#include <ostream>

#include "ddp_bench.h"
#include "driver.h"
#include "process_group.h"

namespace course {

/// The table above (every rank calls it; rank 0 prints to `out`). PASS when every row left
/// identical parameters on every rank.
/// The model, batch, rounds and CSV path are lesson 10's DdpBenchOptions (its svg_path is
/// not used).
Verdict run_hooks_bench(ProcessGroup& group, const DdpBenchOptions& options, std::ostream& out);

}  // namespace course
