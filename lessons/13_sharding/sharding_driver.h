// sharding_driver.h: lesson 13, given: what ./lesson13 runs around your sharded model: the
// self-check, the comparison with lesson 10's DDP, the training run with its memory
// report, and the benchmark.
//
//   run_lesson13_self_check(*group);                       // ring halves, stages 1-3
//   run_sharded_training(options, *group, std::cout);     // ./lesson13 --stage 3
//   run_sharding_bench(*group, bench, std::cout);          // ./lesson13 --bench
//
// THE SELF-CHECK (under a second), rank-dependent data against serial oracles:
//   reduce_scatter_ring, all_gather_ring  on 4 sizes (0, fewer values than ranks, a count
//                            with a remainder, a few chunks' worth), SUM and AVG, and in
//                            place; the first wrong element is named
//   stages 1, 2, 3           two SGD, then two Adam steps of a small MLP (one parameter count not
//                            divisible by N) equal two steps of lesson 10's DDP from the
//                            same start, to compare_sharded_with_ddp's tolerance
//
// THE TRAINING RUN (run_sharded_training): lesson 09's loop (ddp_train_step, the
// DistributedSampler, the test set evaluated on every rank: stage 3 gathers to evaluate),
// the optimizer built on the shards. First the equivalence with DDP (kEquivalenceSteps
// steps, on fresh copies outside the memory budget). Then the memory report: the ledger's
// peak by kind beside the model (fsdp.h), and every tensor of the process measured
// (Storage::peak_cpu_bytes: model state, activations and batches). --checkpoint: rank 0
// writes the full parameters and the consolidated optimizer state ("optimizer.0.weight.
// exp_avg", ...) as one safetensors file. PASS: the ranks' parameters identical, the
// equivalence within tolerance and the target accuracy.
//
// THE BENCHMARK (run_sharding_bench): lesson 10's bench model (784 -> hidden x layers ->
// 10) with Adam on a synthetic batch; one row per stage, DDP (lesson 10, gradients as
// bucket views) first; each row built, warmed up and timed alone, so that its memory is
// its own. Per row: peak bytes per rank of model state (the ledger; DDP's counted from its
// buffers) and the model's figure, every tensor measured, values sent per step (tcp) and
// modelled, the slowest rank's median step and its ratio to DDP. Then the ring's halves
// beside the whole ring on 1, 16 and 64 MiB: time, algbw and nccl-tests' busbw (factors
// (N-1)/N for reduce-scatter and all-gather, 2(N-1)/N for all-reduce).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "data_loader.h"
#include "ddp_bench.h"
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

/// Largest |sharded - DDP| over every parameter after one step per batch of `batches`
/// (this rank's), both from the same start (the MLP `sizes` seeded as make_ddp_model
/// does, rank 0's broadcast): lesson 10's DDP with gradients as bucket views, and a
/// ShardedModel with `sharding`, each with o's optimizer. Collective; the same value on
/// every rank.
double compare_sharded_with_ddp(const DdpTrainingOptions& o, const ShardingOptions& sharding,
                                const std::vector<int64_t>& sizes,
                                const std::vector<Batch>& batches, ProcessGroup& group);

/// The tolerance of that comparison: lesson 09's equivalence_tolerance(o). Both sum the
/// same gradients over ranks; DDP divides each by N before the all-reduce, the shards
/// after the reduction, so the means differ in their last bit, and the optimizers
/// step the same values otherwise (element by element, in the same order).
double sharded_tolerance(const DdpTrainingOptions& o);

std::string run_lesson13_self_check(ProcessGroup& group);
extern const char* const kLesson13SelfCheckPassed;

Verdict run_sharded_training(const ShardedTrainingOptions& o, ProcessGroup& group,
                             std::ostream& out);

Verdict run_sharding_bench(ProcessGroup& group, const DdpBenchOptions& options, std::ostream& out);

}  // namespace course
