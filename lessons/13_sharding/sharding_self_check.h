// sharding_self_check.h: lesson 13, given: the self-check ./lesson13 runs before anything
// else, and the comparison with lesson 10's DDP that it and the training run share.
//
//   const std::string problem = run_lesson13_self_check(*group);   // "" when all matched
//
// THE SELF-CHECK (under a second), rank-dependent data against serial oracles:
//   reduce_scatter_ring, all_gather_ring  on 4 sizes (0, fewer values than ranks, a count
//                            with a remainder, a few chunks' worth), SUM and AVG, and in
//                            place; the first wrong element is named
//   stages 1, 2, 3           two SGD, then two Adam steps of a small MLP of three units
//                            (784-33-17-10: a parameter count not divisible by N) equal two
//                            steps of lesson 10's DDP from the same start, to
//                            compare_sharded_with_ddp's tolerance; and the schedule kept
//                            (ShardedModel::schedule_problem: which units are gathered when
//                            each runs forward and backward, every gradient buffer freed,
//                            the ledger's peak within 10% of the model)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data_loader.h"
#include "ddp_training.h"
#include "fsdp.h"
#include "process_group.h"

namespace course {

/// What compare_sharded_with_ddp found.
struct ShardedComparison {
  double difference = 0;  ///< largest |sharded - DDP| over every parameter, over ranks
  std::string problem;    ///< the sharded model's schedule_problem() (fsdp.h), any rank's
};

/// One step per batch of `batches` (this rank's) from the same start (the MLP `sizes`
/// seeded as make_ddp_model does, rank 0's broadcast): lesson 10's DDP with gradients as
/// bucket views, and a ShardedModel with `sharding` (and a ledger of its own), each with
/// o's optimizer. Collective; the same result on every rank.
ShardedComparison compare_sharded_with_ddp(const DdpTrainingOptions& o,
                                           const ShardingOptions& sharding,
                                           const std::vector<int64_t>& sizes,
                                           const std::vector<Batch>& batches, ProcessGroup& group);

/// The tolerance of that comparison: lesson 09's equivalence_tolerance(o). Both sum the
/// same gradients over ranks; DDP divides each by N before the all-reduce, the shards
/// after the reduction, so the means differ in their last bit, and the optimizers
/// step the same values otherwise (element by element, in the same order).
double sharded_tolerance(const DdpTrainingOptions& o);

/// The self-check above: "" when everything matched, else the first difference (the same
/// text on every rank). Collective.
std::string run_lesson13_self_check(ProcessGroup& group);
/// What rank 0 prints when the self-check passed.
extern const char* const kLesson13SelfCheckPassed;

}  // namespace course
