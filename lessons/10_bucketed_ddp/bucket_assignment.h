// bucket_assignment.h: lesson 10, part 1: which gradients travel together
// (torch's compute_bucket_assignment_by_size, torch/csrc/distributed/c10d/reducer.cpp).
//
//   // four parameters of 4, 2, 6 and 1 MiB, filled last-registered first, limits 1 MiB
//   // for the first bucket and then 5 MiB:
//   compute_bucket_assignment_by_size({4 << 20, 2 << 20, 6 << 20, 1 << 20}, {3, 2, 1, 0},
//                                     {1 << 20, 5 << 20})
//   // == {{3}, {2}, {1, 0}}     1 MiB reached the first limit; 6 MiB overshot 5;
//   //                           2 + 4 = 6 MiB overshot 5 again
//
// THE RULE (the same as torch's, one dtype and one device):
//   1. Walk the parameters in `order` (at construction: reverse registration order, the
//      order backward is expected to produce their gradients; after the first iteration:
//      the order the gradients really arrived in).
//   2. Add the parameter to the open bucket and its bytes to the bucket's size.
//   3. If the size has reached the current limit (size >= limit), close the bucket, and
//      move to the next limit unless this was the last one (the last limit repeats).
//   4. A bucket left open at the end is closed as it is.
// So a bucket overshoots its limit by at most its last parameter, a parameter larger than
// the limit closes the bucket it lands in, a limit of 0 gives one bucket per parameter,
// and a limit larger than the model gives one bucket.
//
// Buckets are listed in the order they were closed, which is the order the reducer
// launches their all-reduces; inside a bucket, parameters keep `order`.
//
// What this is not: torch's per-(dtype, device) bookkeeping or sparse gradients (every
// parameter here is float32 on one device).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace course {

/// One bucket: the indices of its parameters, in the order they were added.
using BucketIndices = std::vector<size_t>;

/// Throws a ConfigError, naming what is wrong, unless the arguments of
/// compute_bucket_assignment_by_size (below) meet its REQUIRES.
void check_bucket_assignment(const std::vector<int64_t>& bytes, const std::vector<size_t>& order,
                             const std::vector<int64_t>& limits);

/// The buckets for parameters of `bytes[i]` bytes each, filled in `order` under `limits`
/// (see THE RULE above).
/// REQUIRES: `order` is a permutation of 0 .. bytes.size() - 1; `limits` is not empty;
/// every bytes[i] and limit >= 0. ConfigError otherwise, naming what is wrong.
std::vector<BucketIndices> compute_bucket_assignment_by_size(const std::vector<int64_t>& bytes,
                                                             const std::vector<size_t>& order,
                                                             const std::vector<int64_t>& limits);

/// n - 1, n - 2, ..., 0: reverse registration order.
std::vector<size_t> reverse_order(size_t n);

/// Mebibytes to bytes, rounded down: 0.25 -> 262144. Negative values are a ConfigError; a
/// value too large for int64 (use "one bucket") saturates.
int64_t mib_to_bytes(double mib);

}  // namespace course
