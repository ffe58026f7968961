// distributed_eval.h: lesson 11, evaluation split over the ranks whose result equals one
// process's exactly (given).
//
//   EvalStats e = evaluate_distributed(*model, test, pg);   // every rank gets the same e
//
// Each rank takes its DistributedSampler share of the validation set (no shuffle), drops
// the padding, evaluates, and the sums (loss, correct, count) are all-reduced:
//
//   n = 10, N = 4: the sampler pads the order to 12 with 0 and 1 again
//   position  0 1 2 3 | 4 5 6 7 | 8 9 10 11
//   index     0 1 2 3 | 4 5 6 7 | 8 9  0  1     <- positions >= n are padding
//   rank      0 1 2 3 | 0 1 2 3 | 0 1  2  3
//   rank 2 evaluates {2, 6}, rank 3 {3, 7}: examples 0 and 1 are counted once, not twice.
//
// torch's evaluation loops usually keep the padding and so count n + pad examples (the
// accuracy is off by up to (N - 1) / n); torch's own remedy is to evaluate the tail on one
// rank. Dropping the padding positions is the same thing done up front.
//
// What this is not: a shuffled or sharded-file evaluation; every rank holds the whole set.
#pragma once
#include <cstdint>
#include <vector>

#include "dataset.h"
#include "module.h"
#include "process_group.h"
#include "trainer.h"

namespace course {

/// Rank `rank`'s examples: DistributedSampler(n, world, rank, no shuffle) without the
/// padding positions (>= n). Every example lands on exactly one rank.
std::vector<int64_t> evaluation_indices(int64_t n, int world, int rank);

/// Collective. Mean loss and accuracy of `model` over all of `data`, as one process would
/// compute them (the same correct count; the loss up to float rounding of the sum).
/// The caller puts the model in evaluation mode (BatchNorm: running statistics).
EvalStats evaluate_distributed(Module& model, const Dataset& data, ProcessGroup& pg,
                               int64_t batch_size = 1000);

}  // namespace course
