// shm_bench.h: lesson 12's benchmark: the ring all-reduce over tcp and over shared
// memory, beside the Gloo backend, against each transport's own link ceiling.
//
//   ./lesson12 --bench --np 2 [-b 1M] [-e 64M] [-f 4] [-n 10] [-w 3] [--rounds 3]
//   make bench            (--np 2 and --np 4; CSV under bench-results/)
//
// What it prints (rank 0), one block per row kind, every row the slowest rank's mean
// over -n calls, best of --rounds rounds (common/bench/collective_bench.h):
//   link      ranks 0 and 1 streaming to each other at once through their stream, at the
//             largest size (measure_link): link-tcp over the mesh socket, link-shm
//             through the shared segment (memcpy in, memcpy out, between two processes):
//             the most a ring step can move per direction on that transport
//   ring-tcp  lesson 05's ring (lesson 12's tuning) over sockets
//   ring-shm  the same ring over shared memory
//   gloo      gloo::allreduce through the gloo backend, when built with Gloo
// then notes: ring-shm / ring-tcp and best ring / gloo at 16 and 64 MiB (the lesson's
// targets), the tuning in use (LOCAL_WORLD_SIZE against the cores).
//
// The sizes are measured interleaved (at one size, every algorithm once per round).
//
// What this is not: a test. Its verdict depends only on #wrong being 0 everywhere.
#pragma once

#include <ostream>
#include <string>

#include "collective_bench.h"
#include "driver.h"

namespace course {

/// What ./lesson12 --bench takes from its flags.
struct ShmBenchOptions {
  /// -b -e -f -n -w -o --rounds.
  BenchSweep sweep;
  /// Where rank 0 writes the CSV ("" for nowhere).
  std::string csv_path;
};

/// Runs the benchmark on every rank of the job (each rank calls it); rank 0 prints to
/// `out` and writes the CSV. Returns #wrong summed over every row.
long run_shm_bench(DriverContext& ctx, const ShmBenchOptions& options, std::ostream& out);

}  // namespace course
