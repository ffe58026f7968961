// main.cpp: ./lesson05, the ring all-reduce, and its benchmark.
//
//   make lesson05 && ./lesson05 --np 4            check your ring (any N from 1 to 64)
//   ./lesson05 --np 4 --backend gloo              the same checks on the real Gloo
//   ./lesson05 --bench --np 4 [-b 4K -e 64M -f 4 -n 20 -w 5 -o sum]
//                                                 naive vs ring vs gloo, nccl-tests style
//
// The check (ring_self_check.h): every rank all-reduces inputs that depend on rank and index
// (collective_oracle.h: powers of two, so every result is exact) for counts 0, 1, N-1,
// N+1, 7N+3, 65537 and 2^20+3, with every op (sum, prod, min, max, avg), and compares
// with a serial oracle; then (tcp, 2 to 8 ranks) one sum of N x 4 Mi + 3 elements, whose
// 16 MiB segments do not fit in a socket's buffers: a ring that sends a segment before it
// receives deadlocks there, and fails within seconds saying so. With --backend tcp (the default)
// the calls go through the tcp process group with your lesson 05 installed (all_reduce =
// all_reduce_ring), and your all_reduce_ring is also called directly with tiny chunks (1 and 3
// elements), which makes every segment many chunks long, with the sends on this thread and on the
// sender thread that buffers of 8 MiB and more use. Then every rank hashes its results and compares
// the hash with every other rank's through the store: a ring must give every rank the
// same bits. The verdict is PASS only if all of that holds on every rank.
#include <iostream>

#include "all_reduce_bench.h"
#include "collective_bench_flags.h"
#include "driver.h"
#include "flags.h"
#include "process_group_factory.h"
#include "ring_allreduce.h"
#include "ring_self_check.h"

namespace {

course::AllreduceBenchOptions g_bench;  // filled by the flags

course::Verdict run_bench(course::DriverContext& ctx) {
  course::AllreduceBenchOptions options = g_bench;
  options.csv_path = ctx.bench_csv();
  const course::AllreduceBenchResult result = course::run_allreduce_bench(ctx, options, std::cout);
  if (result.wrong != 0) {
    return course::Verdict::fail("the benchmark's check found " + std::to_string(result.wrong) +
                                 " wrong element(s) (#wrong column)");
  }
  return course::Verdict::pass("benchmark done, #wrong 0 everywhere");
}

course::Verdict run_rank(course::DriverContext& ctx) {
  return ctx.args().bench ? run_bench(ctx) : course::run_ring_check(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson05";
  config.title = "the ring all-reduce: reduce-scatter, then all-gather, chunked and pipelined";
  config.default_np = 4;
  config.backends = course::available_backends();
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson05_np<N>.csv";
  config.has_link = true;
  g_bench.svg_path = "bench-results/lesson05_busbw.svg";
  const auto add_options = [](course::Flags& flags) {
    course::add_sweep_flags(flags, g_bench.sweep);
    flags
        .option("--svg", g_bench.svg_path,
                "--bench: SVG plot of every lesson05_np*.csv beside the CSV ('' for none)")
        .show_default();
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
