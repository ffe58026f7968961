// bench_stats.h: the statistics every benchmark of the course reports, written once: the
// median of a rank's samples, and the slowest rank's figure (a synchronised step is as
// slow as its slowest rank).
//
//   std::vector<double> times;                 // this rank's seconds per step
//   for (...) { const auto t0 = std::chrono::steady_clock::now(); step();
//               times.push_back(seconds_since(t0)); }          // clock.h
//   const double step_s = slowest_median(times, group);         // collective
//
// slowest_median takes each rank's median, then the largest: what a table row of lessons
// 10, 13 and 14 prints. slowest_samples takes each sample's slowest rank first (steps that
// run in lockstep, lesson 15), to take the median of after.
//
// What this is not: a timer (clock.h's seconds_since reads the clock) nor a table
// (bench_table.h prints and writes them).
#pragma once

#include <vector>

#include "process_group.h"

namespace course {

/// The middle sample of `samples` once sorted; for an even count the upper of the two
/// middle ones (a sample that was measured, not an average of two); 0 for none.
double median(std::vector<double> samples);

/// The median of this rank's `samples`, then the largest over the ranks of `group`.
/// Collective over `group` (one MAX all-reduce of one float): the same value on every rank.
double slowest_median(const std::vector<double>& samples, ProcessGroup& group);

/// Sample i of the slowest rank for each i: `samples` reduced with MAX, element-wise, over
/// `group`. Collective; REQUIRES: the same number of samples on every rank.
std::vector<double> slowest_samples(const std::vector<double>& samples, ProcessGroup& group);

}  // namespace course
