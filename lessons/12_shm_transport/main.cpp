// main.cpp: ./lesson12, the shared-memory transport, and its benchmark.
//
//   make lesson12 && ./lesson12 --np 4                 check your channel (1 to 8 ranks)
//   ./lesson12 --np 4 --transport auto                 the same over auto (tcp, shm, auto)
//   ./lesson12 --bench --np 2 [-b 1M -e 64M -f 4 -n 10 -w 3]
//                      the ring over tcp and over shm beside Gloo, and the shm link's ceiling
//
// The check (transport_self_check.h; --transport shm, the default): every pair of ranks streams
// messages of 0 bytes to 3 MiB + 5, whose bytes depend on both ranks and the index, both ways at
// once over its ShmStream, and compares every byte; then all_reduce (lesson 05's ring, every reduce
// op), broadcast (lesson 03) and all_gather (lesson 04), at several counts up to 1 Mi + 3 elements,
// run over the chosen transport and are compared with the serial oracle; then every rank hashes its
// results and compares the hash with every other rank's through the store. The verdict is PASS only
// if all of that holds on every rank.
#include <iostream>

#include "channel_self_check.h"
#include "collective_bench_flags.h"
#include "driver.h"
#include "flags.h"
#include "shm_bench.h"
#include "shm_transport.h"
#include "transport_self_check.h"

namespace {

course::ShmBenchOptions g_bench;  // filled by the flags
std::string g_transport = "shm";

course::Verdict run_bench(course::DriverContext& ctx) {
  // Your channel alone first, as the check does: a ring that writes past its end would
  // otherwise crash a rank mid-benchmark with nothing named.
  if (const std::string wrong = course::self_check_shm_channel(); !wrong.empty()) {
    return course::Verdict::fail("self-check: " + wrong);
  }
  course::ShmBenchOptions options = g_bench;
  options.csv_path = ctx.bench_csv();
  const long wrong = course::run_shm_bench(ctx, options, std::cout);
  if (wrong != 0) {
    return course::Verdict::fail("the benchmark's check found " + std::to_string(wrong) +
                                 " wrong element(s) (#wrong column)");
  }
  return course::Verdict::pass("benchmark done, #wrong 0 everywhere");
}

course::Verdict run_rank(course::DriverContext& ctx) {
  course::parse_transport(g_transport);
  return ctx.args().bench ? run_bench(ctx) : course::run_transport_check(ctx, g_transport);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson12";
  config.title = "a shared-memory transport for the ranks of one machine";
  config.default_np = 2;
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson12_np<N>.csv";
  g_bench.sweep.min_bytes = 1u << 20;
  g_bench.sweep.iterations = 10;
  g_bench.sweep.warmup = 3;
  const auto add_options = [](course::Flags& flags) {
    flags
        .option("--transport", g_transport,
                "tcp (sockets), shm (shared memory) or auto (shm between ranks of this "
                "machine, tcp otherwise)")
        .show_default();
    course::add_sweep_flags(flags, g_bench.sweep);
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
