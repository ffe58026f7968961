// main.cpp: ./lesson05, the ring all-reduce, and its benchmark.
//
//   make lesson05 && ./lesson05 --np 4            check your ring (any N from 1 to 64)
//   ./lesson05 --np 4 --backend gloo              the same checks on the real Gloo
//   ./lesson05 --bench --np 4 [-b 4K -e 64M -f 4 -n 20 -w 5 -o sum]
//                                                 naive vs ring vs gloo, nccl-tests style
//
// The check: every rank all-reduces inputs that depend on rank and index
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
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <vector>

#include "all_reduce_bench.h"
#include "all_reduce_ring.h"
#include "collective_oracle.h"
#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "process_group_factory.h"
#include "result_checks.h"
#include "ring_allreduce.h"

namespace {

using course::ReduceOp;

course::AllreduceBenchOptions g_bench;  // filled by the flags

// Segments of 16 MiB, more than a loopback socket buffers: a ring that sends a whole
// segment before it receives deadlocks here, and a socket timeout of 10 s turns that into
// a FAIL saying so instead of a two-minute hang. It runs on a mesh of its own: sockets
// that have already carried large transfers grow their buffers (up to tcp_rmem's maximum)
// and might hold a whole segment. Up to 8 ranks. Returns the deadlock's description, or
// "" when the call returned.
template <typename Check>
std::string large_case(course::DriverContext& ctx, const Check& check) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  if (world < 2 || world > 8) return "";
  course::TcpComm comm(course::connect_full_mesh(ctx.store(), rank, world, course::job_token(),
                                                 ctx.advertise_host(), "lesson05/large"),
                       course::Millis(10'000));
  const size_t count = static_cast<size_t>(world) * (size_t{4} << 20) + 3;
  std::vector<float> data = course::reduce_values(rank, count);
  try {
    course::all_reduce_ring(comm, data, ReduceOp::SUM);
  } catch (const course::TimeoutError& e) {
    return "deadlock in all_reduce_ring of " + std::to_string(count) +
           " elements (16 MiB per segment) on rank " + std::to_string(rank) + ": " + e.detail();
  }
  check("all_reduce_ring of " + std::to_string(count) + " (sum), 16 MiB per segment", data,
        ReduceOp::SUM, count);
  if (rank == 0) {
    std::cout << "all_reduce_ring of " << count << " elements (16 MiB per segment, more than a "
              << "socket buffers) checked" << std::endl;
  }
  return "";
}

course::Verdict run_check(course::DriverContext& ctx) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  const size_t n = static_cast<size_t>(world);
  std::vector<size_t> counts = course::collective_counts(world);
  counts.push_back((size_t{1} << 20) + 3);  // 4 MiB: many chunks per segment

  course::GroupRecipe recipe;
  recipe.name = "lesson05";
  recipe.host = ctx.advertise_host();
  recipe.token = course::job_token();
  recipe.connect_mesh = course::connect_full_mesh;
  recipe.install = course::install_lesson05;
  const std::string backend = ctx.args().backend;
  auto pg = course::make_process_group(backend, ctx.store(), rank, world, recipe);
  if (rank == 0) {
    std::cout << "backend " << backend << ", all_reduce = "
              << (backend == "tcp" ? "ring (lesson 05): your all_reduce_ring"
                                   : "gloo::allreduce (ring)")
              << ", " << world << " rank(s)" << std::endl;
  }

  course::ResultHash hash;
  course::ResultChecker checker;
  std::vector<std::string>& failures = checker.failures;
  const auto check = [&](const std::string& call, std::span<const float> got, ReduceOp op,
                         size_t count) {
    hash.add(got);
    checker.check(call, got, course::expected_reduce(op, world, count), course::tolerance(op));
  };
  const auto call_name = course::reduce_call_name;

  for (size_t count : counts) {
    for (ReduceOp op : course::all_reduce_ops()) {
      std::vector<float> data = course::reduce_values(rank, count);
      pg->all_reduce(data, op);
      check(call_name("all_reduce", count, op), data, op, count);
    }
    if (rank == 0) {
      std::cout << "all_reduce of " << count << " elements: sum prod min max avg checked"
                << std::endl;
    }
  }
  // The pipeline with tiny chunks: every segment becomes many chunks.
  if (backend == "tcp") {
    auto& comm = static_cast<course::TcpProcessGroup&>(*pg).comm();
    for (size_t chunk : {size_t{1}, size_t{3}}) {
      for (ReduceOp op : course::all_reduce_ops()) {
        const size_t count = 7 * n + 3;
        std::vector<float> data = course::reduce_values(rank, count);
        course::all_reduce_ring(comm, data, op, chunk);
        check(call_name("all_reduce_ring", count, op) + " in chunks of " + std::to_string(chunk),
              data, op, count);
      }
    }
    if (rank == 0)
      std::cout << "all_reduce_ring in chunks of 1 and 3 elements checked" << std::endl;
    if (const std::string deadlock = large_case(ctx, check); !deadlock.empty()) {
      return course::Verdict::fail(deadlock);
    }
  }

  // Same bits on every rank, compared through the store (not through the ring).
  ctx.store().set("lesson05/hash/" + std::to_string(rank), std::to_string(hash.value()));
  for (int r = 0; r < world; ++r) {
    const std::string theirs = ctx.store().get("lesson05/hash/" + std::to_string(r));
    if (theirs != std::to_string(hash.value())) {
      failures.push_back("results differ between rank " + std::to_string(r) + " and rank " +
                         std::to_string(rank));
    }
  }
  if (!failures.empty()) {
    return course::Verdict::fail(std::to_string(failures.size()) + " problem(s) on rank " +
                                 std::to_string(rank) + ", first: " + failures.front());
  }
  return course::Verdict::pass(
      "all_reduce (" + backend + ") matches the oracle for " + std::to_string(counts.size()) +
      " counts x 5 ops" +
      (backend == "tcp" && world >= 2 && world <= 8 ? ", the ring with 16 MiB segments too" : "") +
      ", identical on every rank");
}

course::Verdict run_bench(course::DriverContext& ctx) {
  course::AllreduceBenchOptions options = g_bench;
  if (options.csv_path.empty()) {
    options.csv_path = "bench-results/lesson05_np" + std::to_string(ctx.world()) + ".csv";
  }
  const course::AllreduceBenchResult result = course::run_allreduce_bench(ctx, options, std::cout);
  if (result.wrong != 0) {
    return course::Verdict::fail("the benchmark's check found " + std::to_string(result.wrong) +
                                 " wrong element(s) (#wrong column)");
  }
  return course::Verdict::pass("benchmark done, #wrong 0 everywhere");
}

course::Verdict run_rank(course::DriverContext& ctx) {
  return ctx.args().bench ? run_bench(ctx) : run_check(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson05";
  config.title = "the ring all-reduce: reduce-scatter, then all-gather, chunked and pipelined";
  config.default_np = 4;
  config.backends = course::available_backends();
  config.has_bench = true;
  config.has_link = true;
  g_bench.svg_path = "bench-results/lesson05_busbw.svg";
  const auto add_options = [](CLI::App& app) {
    course::add_sweep_flags(app, g_bench.sweep);
    app.add_option("--csv", g_bench.csv_path,
                   "--bench: CSV file (default bench-results/lesson05_np<N>.csv)");
    app.add_option("--svg", g_bench.svg_path,
                   "--bench: SVG plot of every lesson05_np*.csv beside the CSV ('' for none)")
        ->capture_default_str();
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
