// ddp_self_check.h: lesson 09, given: the driver's self-check, run before training, of the
// cases a default run cannot see. Each failure names the function and the case.
//
//   1. DistributedSampler, on every rank alone (no messages), against torch's definition:
//        129 examples on 2 ranks, no shuffle   uneven: one rank needs the padding
//        10 on 4, shuffled, epoch 1            the README's table: padding from the front
//        10 on 4, drop_last                    the tail cut instead
//        3 on 5, shuffled                      fewer examples than ranks: the front repeats
//      "DistributedSampler: 129 examples on 2 ranks gave 65 and 64 indices; every rank
//       needs 65 (ceil(129 / 2): pad the order from its front to 130)"
//   2. NaiveDdp's construction: every rank seeds a small MLP differently; after
//      construction every parameter must equal rank 0's, bit for bit (broadcast_state).
//   3. sync_gradients_per_param, then sync_gradients_flat: rank r's gradient is
//      (r + 1) * c (sync_check.h), so the mean has a closed form; the first parameter that
//      differs is named with the kind of difference (the sum, twice divided, this rank's
//      own, zero, or arbitrary).
//
// A training run that starts after these pass can still fail its equivalence or accuracy
// check (ddp_training.h); the self-check only makes the common mistakes name themselves.
// What this is not: the lesson's tests (make grade-lesson09), which try many more sizes,
// world sizes, optimizers and backends.
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// Part 1: "" when this build's DistributedSampler gives every rank torch's indices in the
/// cases above, else what differs. Local: no messages.
std::string self_check_distributed_sampler();

/// Parts 2 and 3, collectively on every rank of `pg`: "" or the first problem (the same
/// text on every rank).
std::string self_check_naive_ddp(ProcessGroup& pg);

/// What the driver prints when run_lesson09_self_check passes.
constexpr const char* kLesson09SelfCheckPassed =
    "self-check: DistributedSampler on uneven data, NaiveDdp's broadcast and both gradient "
    "variants: as expected";

/// Parts 1 to 3; every rank returns the same text.
std::string run_lesson09_self_check(ProcessGroup& pg);

}  // namespace course
