// no_sync_check.h: lesson 10, given: the driver's --grad-accum check of
// DistributedDataParallel::no_sync() on real batches.
//
//   ./lesson10 --np 2 --grad-accum 4
//
// Every rank builds lesson 07's MLP in DDP (rank 0's parameters broadcast) and takes one
// optimizer step over K micro-batches of --batch-size examples, the first K - 1 under
// no_sync, each loss scaled by 1/K; rank r's micro-batches are rows [r K B, (r + 1) K B)
// of one global batch. One process (the oracle, starting from the same parameters) takes
// one step on all N * K * B rows. Accumulating locally and synchronising only the last
// micro-batch must give the oracle's parameters within equivalence_tolerance.
//
// What this is not: the lesson's no_sync tests (make grade-lesson10), which also check
// that no bucket is launched under no_sync.
#pragma once

#include <ostream>
#include <string>

#include "ddp_training.h"
#include "process_group.h"
#include "reducer.h"

namespace course {

/// Collectively, K = micro_batches >= 2: "" or what differed on this rank. Rank 0 prints
/// the largest difference to `out`.
std::string check_no_sync(const DdpTrainingOptions& o, const DdpData& data, ProcessGroup& pg,
                          const ReducerOptions& reducer, int micro_batches, std::ostream& out);

}  // namespace course
