// collective_oracle.h: inputs with known answers, and the serial answers themselves, for
// checking any collective on any backend (tests, drivers, the benchmarks' #wrong column).
//
// Inputs depend on the rank and the index, so a block that lands in the wrong place or on
// the wrong rank shows up (all-ones inputs would hide it):
//
//   data_value(r, i)    = 65536 r + (i mod 65521)      data-movement collectives
//   reduce_value(r, i)  = +-2^e, e in {-2..2}, sign and e from a hash of (r, i)
//
// Every reduce_value is a power of two, so sums (multiples of 1/4, far below 2^24) and
// products (powers of two) are exact in float whatever the order or grouping of the
// combine: a tree, a ring and the serial loop below agree to the bit, and so do all
// ranks. Only AVG's final division rounds (once; see expected_reduce). data_value is exact
// for ranks below 256.
//
// The serial answers are written here, independently of the lessons, in the plainest
// way: a loop over ranks in order.
//
// What this is not: a collective. Nothing here talks to another rank.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "process_group.h"

namespace course {

float data_value(int rank, size_t index);
float reduce_value(int rank, size_t index);

/// [data_value(rank, offset), ..., data_value(rank, offset + count - 1)]
std::vector<float> data_values(int rank, size_t count, size_t offset = 0);
/// [reduce_value(rank, offset), ...]
std::vector<float> reduce_values(int rank, size_t count, size_t offset = 0);

/// Element i: the reduction (op) over ranks 0..world-1, in rank order, of
/// reduce_value(r, offset + i). AVG: the exact sum, divided by world once.
std::vector<float> expected_reduce(ReduceOp op, int world, size_t count, size_t offset = 0);

/// What rank `rank` holds after each collective, when every rank r passed data_values(r,
/// ...) (reduce_values for the reducing ones). k: elements per block.
std::vector<float> expected_broadcast(int root, size_t count);
std::vector<float> expected_scatter(int root, int rank, size_t k);  // input: data_values(root, N k)
std::vector<float> expected_gather(int world, size_t k);            // input: data_values(r, k)
std::vector<float> expected_all_to_all(int world, int rank,
                                       size_t k);  // input: data_values(r, N k)
std::vector<float> expected_reduce_scatter(ReduceOp op, int world, int rank, size_t k);

/// How far `actual` may be from `expected` for op: 0 (exact) except AVG, whose one
/// division a backend may do as a multiplication by 1/N: 1e-6 relative.
float tolerance(ReduceOp op);

/// The number of elements i where |actual[i] - expected[i]| > tol * max(1, |expected[i]|)
/// (NaN counts as wrong), plus the size difference if the sizes differ.
size_t count_wrong(std::span<const float> actual, std::span<const float> expected,
                   float tol = 0.0f);

/// "" when count_wrong() is 0, else "12 of 100 elements differ; first at [3]: got 5, expected 7".
std::string describe_wrong(std::span<const float> actual, std::span<const float> expected,
                           float tol = 0.0f);

}  // namespace course
