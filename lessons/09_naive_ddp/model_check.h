// model_check.h: lesson 09, the collective checks that keep DDP from hanging or silently
// averaging the wrong things (given). Every rank calls each check at the same point; every
// rank gets the same answer, so they all throw (or all go on) together.
//
//   verify_same_parameters(model, pg);          // at construction (torch:
//                                               // _verify_param_shape_across_processes)
//   check_gradients_present(named_params, pg);  // after backward, before any all-reduce
//
// PROTOCOL (both checks): each rank encodes what it has into a fixed-length vector of
// floats and all_gathers it; every rank then compares rank 0's entry with every other's
// in the same order, so the first difference found, and the message, is the same
// everywhere. Lengths differ between ranks only through values that are agreed first with
// an all_reduce(MAX) (the longest name, the most dimensions), so every all_gather has one
// length on every rank.
//
// Encoding for verify_same_parameters, per parameter (names and shapes are small
// integers, exact in float32): [ name as character codes, 0-padded to L | dims | shape,
// 0-padded to D ], after one leading entry: the parameter count.
//
// COST: three small all-reduces and one all_gather at construction; one all_gather of
// P floats per rank per step for the gradient check.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "module.h"
#include "process_group.h"

namespace course {

/// Throws ConfigError on every rank when the ranks' parameter count, names or shapes
/// differ: "rank 1 has a different model than rank 0: parameter 2 is \"2.weight\" [10, 64]
/// on rank 1 but \"2.weight\" [10, 32] on rank 0" (or the counts). Collective.
void verify_same_parameters(const Module& model, ProcessGroup& pg);

/// Throws ConfigError on every rank when some parameter has no grad() on some rank,
/// naming the first such parameter and the ranks without it. Collective.
void check_gradients_present(const std::vector<std::pair<std::string, Variable>>& params,
                             ProcessGroup& pg);

}  // namespace course
