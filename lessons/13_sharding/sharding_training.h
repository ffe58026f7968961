// sharding_training.h: lesson 13, given: ./lesson13's training run around your sharded
// model.
//
//   run_sharded_training(options, *group, std::cout);     // ./lesson13 --stage 3
//
// THE TRAINING RUN (run_sharded_training): lesson 09's loop (ddp_train_step, the
// DistributedSampler, the test set evaluated on every rank: stage 3 gathers to evaluate),
// the optimizer built on the shards. First the equivalence with DDP (kEquivalenceSteps
// steps, on fresh copies outside the memory budget: compare_sharded_with_ddp). Then the
// memory report: the ledger's peak by kind beside the model (fsdp.h), and every tensor of
// the process measured (Storage::peak_cpu_bytes: model state, activations and batches).
// --checkpoint: rank 0 writes the full parameters and the consolidated optimizer state as
// the unsharded model and its optimizer would hold them, with lesson 07's save_checkpoint
// (checkpoint.h: "optimizer.<i>.exp_avg", a CRC-32 per tensor, atomically). PASS: the
// ranks' parameters identical, the equivalence within tolerance, the schedule kept
// (ShardedModel::schedule_problem: the ledger's peak within 10% of the model included)
// and the target accuracy. --memory-budget: any value above 0 is a budget (printed in
// KiB below 1 MiB), 0 none.
#pragma once

#include <ostream>

#include "ddp_training.h"
#include "driver.h"
#include "fsdp.h"
#include "process_group.h"

namespace course {

/// ./lesson13's training flags: lesson 09's, plus the stage, the wrap policy, prefetch
/// and the per-rank memory budget.
struct ShardedTrainingOptions : DdpTrainingOptions {
  ShardingOptions sharding;
  double memory_budget_mib = 0;  ///< 0: no budget
};

/// The run above (every rank calls it; rank 0 prints to `out`). Collective.
Verdict run_sharded_training(const ShardedTrainingOptions& o, ProcessGroup& group,
                             std::ostream& out);

}  // namespace course
