// tp_self_check.h: lesson 15, given: the driver's self-check of your tensor-parallel pieces
// against serial oracles, run before training. Each failure names the function at fault
// and the case.
//
//   1. copy_to_tp / CopyToTpBackward, reduce_from_tp / ReduceFromTpBackward,
//      gather_from_tp / GatherFromTpBackward, scatter_to_tp / ScatterToTpBackward: forward
//      values and backward gradients with rank- and index-dependent inputs and seeds.
//   2. ColumnParallelLinear::forward (with and without gather_output) and
//      RowParallelLinear::forward (input parallel, and scattered): the output and the
//      gradients of input, weight shard and bias against lesson 06's linear on the full
//      tensors; a row bias added on every rank is named as added T times.
//   3. vocab_parallel_cross_entropy and its backward against lesson 06's cross_entropy,
//      with 10 classes (padded when T does not divide them; the padded columns hold large
//      values, which the loss must ignore), then with logits of 100 and more whose shards'
//      maxima lie 30 apart: a loss that overflows is named (subtract the row maximum), and
//      one computed with each rank's own maximum (the MAX all-reduce left out) or with the
//      padded columns is named by that cause.
//
// Collective over `tp`: every rank runs every check; the first problem found on any rank
// is returned on every rank. What this is not: the lesson's tests (make grade-lesson15),
// which add the model, the equivalence with one process after many steps and the grid.
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// "" or the first problem, the same text on every rank. Collective.
std::string run_lesson15_self_check(ProcessGroup& tp);

extern const char* const kLesson15SelfCheckPassed;

}  // namespace course
