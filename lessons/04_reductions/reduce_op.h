// reduce_op.h: lesson 04: combining two buffers element by element, for every ReduceOp.
//
//   acc:  [ 1  -2   4 ]     reduce_op_apply(SUM, acc, in)  ->  acc = [ 3  -1   4 ]
//   in:   [ 2   1   0 ]     reduce_op_apply(MAX, acc, in)  ->  acc = [ 2   1   4 ]
//
// SUM, PRODUCT, MIN and MAX are associative and commutative, so a reduction may combine
// the ranks' buffers in any order and any grouping (a tree, a ring) and still get the
// same answer (exactly, for integers; up to rounding, for arbitrary floats). AVG is not an
// op you can combine pairwise: avg(avg(a, b), c) != avg(a, b, c). So every algorithm
// combines AVG as SUM, and whoever holds the final sum divides it by N once:
// reduce_op_finish.
//
// What this is not: fast. The loops are plain, one per op, as written here; GCC at -O2 may
// leave them scalar. The ring of lesson 05 reduces with common/comm/reduce_kernels.h,
// whose loops are blocked so that the compiler vectorises them.
#pragma once

#include <span>

#include "process_group.h"

namespace course {

/// acc[i] = acc[i] (op) in[i] for every i; AVG combines as SUM.
/// REQUIRES: acc.size() == in.size() (else ConfigError naming both).
void reduce_op_apply(ReduceOp op, std::span<float> acc, std::span<const float> in);

/// Finishes a reduction over `world` ranks: AVG divides every element by world; the other
/// ops leave acc as it is. Call it exactly once, on the fully combined result.
void reduce_op_finish(ReduceOp op, std::span<float> acc, int world);

}  // namespace course
