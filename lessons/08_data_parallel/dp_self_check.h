// dp_self_check.h: lesson 08, given: the driver's self-check, run before the equivalence
// check and training, of what a run on an even batch with healthy replicas cannot see.
// Each failure names the function and the case.
//
//   scatter_chunk_sizes   129 rows on 2 devices, 10 on 4, 2 on 3 (fewer chunks than
//                         devices), 128 on 2: torch.chunk's sizes
//   scatter               10 numbered rows on 4 devices: each chunk starts where the last ended
//   run_on_devices        a task that throws on device 1 comes home as a ReplicaError;
//                         with gradients off in the caller, they are off in every task
//   parallel_apply        two replicas with different weights: output k is replica k's
//
// What this is not: the lesson's tests (make grade-lesson08), which cover every batch size
// up to 40 on 1-8 devices, the gradients, buffers and timing.
#pragma once

#include <string>

namespace course {

/// "" or the first problem.
std::string self_check_data_parallel();

/// What the driver prints when the self-check passes.
constexpr const char* kDataParallelSelfCheckPassed =
    "self-check: scatter on uneven batches, errors and grad mode in run_on_devices, "
    "parallel_apply's replica per device: as expected";

}  // namespace course
