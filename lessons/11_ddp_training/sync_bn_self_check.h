// sync_bn_self_check.h: lesson 11, given: the driver's self-check of SyncBatchNorm, run
// before training, whatever the flags (the default run trains without --sync-bn, so it
// would never call your code).
//
//   rank r holds r + 1 rows of 3 channels (uneven on purpose: with equal counts, a global
//   variance that forgets the between-rank term (mean_r - mean)^2 is still wrong, but
//   the weighting by n_r is not tested), values depending on rank, row and channel.
//   SyncBatchNorm(3) forward and backward, loss sum(y * w) with rank- and row-dependent w,
//   against one BatchNorm1d over every rank's rows together (computed on every rank):
//     the output rows of rank r   sync_batch_norm_gather_stats (global mean and variance)
//     running_mean, running_var   SyncBatchNorm::forward (global mean, and global unbiased
//                                 variance var * n / (n - 1), as torch's running estimate)
//     the input gradient rows     SyncBatchNormBackward::apply (the all-reduced sums)
//
// What this is not: the lesson's tests (make grade-lesson11), which try more shapes,
// ranks without rows, two steps of running statistics and the weight and bias gradients.
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// Collective on `group`: "" or the first problem, the same text on every rank.
std::string self_check_sync_batch_norm(ProcessGroup& group);

/// What the driver prints when the self-check passes.
constexpr const char* kSyncBnSelfCheckPassed =
    "self-check: SyncBatchNorm forward, running statistics and backward over uneven rows "
    "per rank equal one BatchNorm1d over all rows";

}  // namespace course
