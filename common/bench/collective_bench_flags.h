// collective_bench_flags.h: a benchmark sweep's command-line flags (BenchSweep,
// collective_bench.h), as nccl-tests spells them: -b -e -f -n -w -o, and --rounds.
//
//   BenchSweep sweep;
//   add_sweep_flags(flags, sweep);   // in a driver's main.cpp
//
// The flags are declared through flags.h (the one file that compiles CLI11 is flags.cpp);
// the benchmark code itself needs none of this.
#pragma once

#include <cstddef>
#include <string>

#include "collective_bench.h"
#include "flag_checks.h"
#include "flags.h"
#include "process_group.h"

namespace course {

/// Adds -b, -e, -f, -n, -w, -o and --rounds to `flags`. Sizes take K, M, G suffixes (powers
/// of 1024, as in nccl-tests: -b 8 -e 128M).
inline void add_sweep_flags(Flags& flags, BenchSweep& sweep) {
  const auto size_option = [&flags](const char* name, size_t& target, const char* help) {
    flags
        .option_function(
            name, [&target](const std::string& text) { target = parse_size(text); }, help)
        .default_text(short_size(target))
        .compare_as([&target] { return std::to_string(target); });  // 1M and 1048576 agree
  };
  size_option("-b,--minbytes", sweep.min_bytes, "smallest size (bytes; K, M, G suffixes)");
  size_option("-e,--maxbytes", sweep.max_bytes, "largest size (bytes; K, M, G suffixes)");
  flags.option("-f,--stepfactor", sweep.factor, "multiply the size by this each step")
      .check(number_in(1.01, 1024))
      .show_default();
  flags.option("-n,--iters", sweep.iterations, "timed iterations per size")
      .check(count_in(1, 1000000))
      .show_default();
  flags.option("-w,--warmup_iters", sweep.warmup, "untimed iterations before them")
      .check(count_in(0, 1000000))
      .show_default();
  flags.option("--rounds", sweep.rounds, "each row: the best of this many rounds")
      .check(count_in(1, 1000))
      .show_default();
  flags
      .option_function(
          "-o,--op", [&sweep](const std::string& name) { sweep.op = parse_reduce_op(name); },
          "reduce op: sum, prod, min, max, avg")
      .default_text("sum")
      .compare_as([&sweep] { return std::to_string(static_cast<int>(sweep.op)); });
}

}  // namespace course
