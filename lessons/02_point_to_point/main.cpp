// main.cpp: ./lesson02, messages between ranks.
//
//   make lesson02 && ./lesson02               (2 ranks; --np N for more)
//   ./lesson02 --bench                        latency and bandwidth next to the raw socket
//                                             (the table also in bench-results/lesson02.csv)
//   ./lesson02 --bench --min-bytes 4096 --max-bytes 131072 --reps 9
//
// With --backend tcp (the default) every rank connects the full mesh (lesson 01) and runs
// your point_to_point.cpp; with --backend gloo the same checks call send/recv/isend/irecv
// of a GlooProcessGroup instead, so you can compare (--bench is tcp only; the checks are
// p2p_self_check.h's):
//   1. the seed's ping-pong between ranks 0 and 1: a tensor starts at 0, rank 0 adds 1
//      and sends it, rank 1 adds 2 and sends it back; rank 0 must end with 3;
//   2. tagged messages of several sizes (0 and 1 included) arriving in order;
//   3. every rank isends 32 MiB to the next rank, then irecvs 32 MiB from the previous
//      one (with blocking sends, or an isend that blocks, this deadlocks: see the README;
//      the socket timeout is 10 s here, so it fails in seconds, saying deadlock);
//   4. a receive into a buffer smaller than the message: it must fail, naming both sizes.
// The verdict is PASS only if every rank saw exactly what it should.
#include <iostream>

#include "driver.h"
#include "driver_prologue.h"
#include "flags.h"
#include "full_mesh.h"
#include "handshake.h"
#include "p2p_bench.h"
#include "p2p_self_check.h"
#include "point_to_point.h"
#include "process_group_factory.h"

namespace {

using course::TcpComm;

course::P2pBenchOptions g_bench;  // --min-bytes, --max-bytes, --reps

course::Verdict run_bench(TcpComm& comm, course::DriverContext& ctx) {
  const course::P2pBenchResult result = course::run_p2p_bench(comm, std::cout, g_bench);
  if (ctx.rank() == 0) {
    result.table.write_csv(ctx.bench_csv());
    std::cout << "wrote " << ctx.bench_csv() << std::endl;
  }
  if (ctx.rank() != 0) return course::Verdict::pass();
  const std::string bandwidth = result.bandwidth_fraction > 0
                                    ? ">= 1 MiB bandwidth " +
                                          course::format_fixed(100 * result.bandwidth_fraction, 1) +
                                          "% of raw"
                                    : "no size >= 1 MiB measured (raise --max-bytes)";
  return course::Verdict::pass("benchmark: 8 B half round trip " +
                               course::format_fixed(result.latency_ratio, 2) + "x raw; " +
                               bandwidth);
}

course::Verdict run_rank(course::DriverContext& ctx) {
  if (ctx.world() < 2) return course::Verdict::fail("lesson 02 needs two ranks: --np 2");
  const std::string backend = ctx.args().backend;
  if (backend != "tcp") {
    if (ctx.args().bench) return course::Verdict::fail("--bench runs on the tcp backend only");
    auto pg = course::make_driver_group(ctx, "lesson02");
    return course::run_p2p_checks(course::group_p2p(*pg), " on " + backend);
  }
  TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                         ctx.advertise_host()));
  if (ctx.args().bench) return run_bench(comm, ctx);
  // Every check moves 32 MiB at most: 10 s without progress is a deadlock, not slowness.
  comm.set_timeout(course::Millis(10'000));
  return course::run_p2p_checks(course::lesson_p2p(comm), "");
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson02";
  config.title = "point to point: send/recv with tags, isend/irecv and Work, the ping-pong";
  config.default_np = 2;
  config.backends = course::available_backends();
  config.has_bench = true;
  return course::run_driver(
      argc, argv, config,
      [](course::Flags& flags) {
        flags.option("--min-bytes", g_bench.min_bytes, "with --bench: the smallest size (8)")
            .check(course::count_in(4, int64_t{1} << 30));
        flags.option("--max-bytes", g_bench.max_bytes, "with --bench: the largest size (64 MiB)")
            .check(course::count_in(4, int64_t{1} << 30));
        flags
            .option("--reps", g_bench.repetitions,
                    "with --bench: samples per size, median shown (11)")
            .check(course::count_in(1, 100));
      },
      run_rank);
}
