// collective_bench_flags.h: a benchmark sweep's command-line flags (BenchSweep,
// collective_bench.h), as nccl-tests spells them: -b -e -f -n -w -o, and --rounds.
//
//   BenchSweep sweep;
//   add_sweep_flags(app, sweep);   // in a driver's main.cpp
//
// Inline, so that only the drivers' main.cpp, which declare their flags with CLI11 anyway,
// compile CLI11's header for them (it costs seconds of compile time in every file that
// includes it); the benchmark code needs none of it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <string>

#include "collective_bench.h"
#include "flag_checks.h"
#include "process_group.h"

namespace course {

/// Adds -b, -e, -f, -n, -w, -o and --rounds to `app`. Sizes take K, M, G suffixes (powers
/// of 1024, as in nccl-tests: -b 8 -e 128M).
inline void add_sweep_flags(CLI::App& app, BenchSweep& sweep) {
  const auto size_option = [&app](const char* name, size_t& target, const char* help) {
    app.add_option_function<std::string>(
           name, [&target](const std::string& text) { target = parse_size(text); }, help)
        ->default_str(short_size(target));
  };
  size_option("-b,--minbytes", sweep.min_bytes, "smallest size (bytes; K, M, G suffixes)");
  size_option("-e,--maxbytes", sweep.max_bytes, "largest size (bytes; K, M, G suffixes)");
  app.add_option("-f,--stepfactor", sweep.factor, "multiply the size by this each step")
      ->check(number_in(1.01, 1024))
      ->capture_default_str();
  app.add_option("-n,--iters", sweep.iterations, "timed iterations per size")
      ->check(count_in(1, 1000000))
      ->capture_default_str();
  app.add_option("-w,--warmup_iters", sweep.warmup, "untimed iterations before them")
      ->check(count_in(0, 1000000))
      ->capture_default_str();
  app.add_option("--rounds", sweep.rounds, "each row: the best of this many rounds")
      ->check(count_in(1, 1000))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "-o,--op", [&sweep](const std::string& name) { sweep.op = parse_reduce_op(name); },
         "reduce op: sum, prod, min, max, avg")
      ->default_str("sum");
}

}  // namespace course
