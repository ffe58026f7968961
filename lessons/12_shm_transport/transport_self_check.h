// transport_self_check.h: lesson 12, given: what ./lesson12 checks without --bench.
//
//   ./lesson12 --np 4                    over shared memory (1 to 8 ranks)
//   ./lesson12 --np 4 --transport auto   the same over auto (or tcp)
//
// First your channel alone, full and empty (channel_self_check.h). Then, on a group made
// by shm_driver_recipe over the chosen transport:
//   1. every pair of ranks streams messages of 0 bytes to 3 MiB + 5, whose bytes depend on
//      both ranks and the index, both ways at once over its stream, and compares every
//      byte (the lower rank's sends run on its sender thread);
//   2. all_reduce (lesson 05's ring, every reduce op), broadcast (lesson 03) and
//      all_gather (lesson 04), at collective_counts(N) and 1 Mi + 3 elements, against the
//      serial oracle;
//   3. every rank hashes its results and compares the hash with every other rank's
//      through the store (keys "lesson12/hash/<rank>").
//
// What this is not: the lesson's tests (make grade-lesson12), which also kill peers, time
// out and close streams, or the benchmark (shm_bench.h).
#pragma once

#include <string>

#include "driver.h"

namespace course {

/// The checks above over `transport` ("tcp", "shm" or "auto"), collectively; rank 0
/// prints progress to standard output. PASS only if all of them hold on every rank.
Verdict run_transport_check(DriverContext& ctx, const std::string& transport);

}  // namespace course
