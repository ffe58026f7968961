// clock.h: how long something took, in seconds, on the steady clock (the clock every
// timing in the course uses: it never jumps when the wall clock is set).
//
//   const auto start = std::chrono::steady_clock::now();
//   run_epoch();
//   std::cout << seconds_since(start) << " s\n";
//
// What this is not: a timer class or a statistics package: the benchmarks' medians are
// common/bench/bench_stats.h; this only reads the clock.
#pragma once

#include <chrono>

namespace course {

/// Seconds from `start` to now, on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace course
