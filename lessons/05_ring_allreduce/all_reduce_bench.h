// all_reduce_bench.h: lesson 05's benchmark: the ring next to the naive all-reduce and Gloo,
// in nccl-tests' columns, against the link's own ceiling.
//
//   ./lesson05 --bench --np 4 [-b 4K] [-e 64M] [-f 4] [-n 20] [-w 5] [-o sum] [--rounds 3]
//   make bench            (--np 2 and --np 4; CSV and SVG under bench-results/)
//
// What it prints (rank 0), one block per algorithm, every row the slowest rank's mean
// over -n calls, best of --rounds rounds:
//   link    ranks 0 and 1 streaming to each other at once over a raw mesh socket, from
//           and into one small buffer like iperf (common/bench/collective_bench.h,
//           measure_link): the most two ranks of this machine can move per direction,
//           the ceiling of a ring step. Three rows, at the largest size:
//             link       both ways, small buffers: the link itself
//             link-mem   both ways, from and into buffers of the largest size: the link
//                        plus main memory, what any all-reduce of that size must pay
//             link-1way  rank 0 to rank 1 only: one hop of the naive version's trees
//   naive   lesson 04's all_reduce_naive (reduce to rank 0, then broadcast), tcp backend
//   ring    this lesson's all_reduce_ring, tcp backend
//   gloo    gloo::allreduce (ring algorithm) through the gloo backend, when built with Gloo
// then notes: the ring's efficiency against the link, the ratios the lesson's targets are
// about (ring / gloo at 16 and 64 MiB, ring / naive from 1 MiB up), what the ring would
// gain over the naive version on two ranks were the naive version limited by the link
// alone (not a ceiling: a large buffer costs the naive version main memory and its own
// reduction, which no link bounds; only the ring's busbw against the link is checked, and
// a ring above the link is what "BUSY MACHINE" reports), and rank 0's memcpy rate at the
// largest size (a buffer that does not fit in cache costs main-memory traffic too).
//
// The sizes are measured interleaved (at one size, every algorithm once per round, then
// the next size), so a burst of load on the machine hits all three alike; rows are
// printed per block once the sweep is done. busbw = algbw * 2(N-1)/N (docs/cost_models.md).
//
// What this is not: a test. Its verdict depends only on #wrong being 0 everywhere.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "collective_bench.h"
#include "driver.h"

namespace course {

struct AllreduceBenchOptions {
  BenchSweep sweep;
  /// Where rank 0 writes the CSV ("" for nowhere).
  std::string csv_path;
  /// Where rank 0 writes the SVG plot of every lesson05_np*.csv beside csv_path ("" for
  /// none). Needs gnuplot; without it the plot is skipped with a warning.
  std::string svg_path;
};

struct AllreduceBenchResult {
  CollectiveTiming link;          ///< both ways, small buffers: the ceiling (zeros on one rank)
  CollectiveTiming link_memory;   ///< both ways, buffers of the largest size
  CollectiveTiming link_one_way;  ///< one way, small buffers
  /// "naive", "ring", "gloo" -> one timing per size of the sweep, in order.
  std::map<std::string, std::vector<CollectiveTiming>> rows;
  long wrong = 0;  ///< #wrong summed over every row
};

/// Runs the benchmark on every rank of the job (each rank calls it). Rank 0 prints to
/// `out` and writes the CSV and the plot.
AllreduceBenchResult run_allreduce_bench(DriverContext& ctx, const AllreduceBenchOptions& options,
                                         std::ostream& out);

}  // namespace course
