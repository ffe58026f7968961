// ring_self_check.h: lesson 05, given: what ./lesson05 checks without --bench.
//
//   ./lesson05 --np 4                  your ring through the tcp backend
//   ./lesson05 --np 4 --backend gloo   the same checks on the real Gloo
//
// Every rank all-reduces inputs that depend on rank and index (collective_oracle.h:
// powers of two, so every result is exact) for collective_counts(N) and 2^20 + 3, with
// every op (sum, prod, min, max, avg), through the group the driver's recipe makes, and
// compares with a serial oracle. On tcp, also:
//   - all_reduce_ring called directly with chunks of 1 and 3 elements (count 7N + 3), so
//     every segment is many chunks long;
//   - with 2 to 8 ranks, one sum of N x 4 Mi + 3 elements on a mesh of its own with a
//     10 s socket timeout: 16 MiB segments do not fit in a socket's buffers, so a ring
//     that sends a segment before it receives deadlocks, and fails in seconds saying so.
// Finally every rank hashes its results and compares the hash with every other rank's
// through the store (keys "lesson05/hash/<rank>"): a ring must give every rank the same
// bits.
//
// What this is not: the lesson's tests (make grade-lesson05) or the benchmark
// (all_reduce_bench.h).
#pragma once

#include "driver.h"

namespace course {

/// The checks above, collectively; prints progress on rank 0 to standard output. PASS
/// only if every result matched and every rank has the same bits.
Verdict run_ring_check(DriverContext& ctx);

}  // namespace course
