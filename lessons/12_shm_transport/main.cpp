// main.cpp: ./lesson12, the shared-memory transport, and its benchmark.
//
//   make lesson12 && ./lesson12 --np 4                 check your channel (1 to 8 ranks)
//   ./lesson12 --np 4 --transport auto                 the same over auto (tcp, shm, auto)
//   ./lesson12 --bench --np 2 [-b 1M -e 64M -f 4 -n 10 -w 3]
//                      the ring over tcp and over shm beside Gloo, and the shm link's ceiling
//
// The check (--transport shm, the default): every pair of ranks streams messages of 0
// bytes to 3 MiB + 5, whose bytes depend on both ranks and the index, both ways at once
// over its ShmStream, and compares every byte; then all_reduce (lesson 05's ring, every
// reduce op), broadcast (lesson 03) and all_gather (lesson 04), at several counts up to
// 1 Mi + 3 elements, run over the chosen transport and are compared with the serial
// oracle; then every rank hashes its results and compares the hash with every other
// rank's through the store. The verdict is PASS only if all of that holds on every rank.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <iostream>
#include <vector>

#include "channel_self_check.h"
#include "collective_oracle.h"
#include "driver.h"
#include "driver_recipe.h"
#include "process_group_factory.h"
#include "result_checks.h"
#include "shm_bench.h"
#include "shm_transport.h"

namespace {

using course::ReduceOp;

course::ShmBenchOptions g_bench;  // filled by the flags
std::string g_transport = "shm";

course::GroupRecipe lesson_recipe(course::DriverContext& ctx, const std::string& name,
                                  const std::string& transport) {
  course::GroupRecipe recipe = course::driver_recipe(ctx, name);
  recipe.transport = transport;
  course::install_lesson12(recipe);
  return recipe;
}

// The byte of message `index` at offset i from rank `from` to rank `to`.
uint8_t stream_byte(int from, int to, size_t index, size_t i) {
  return static_cast<uint8_t>(
      (i * 131 + index * 7 + static_cast<size_t>(from) * 31 + static_cast<size_t>(to) * 17) >> 1);
}

// Every pair streams messages of many sizes both ways at once over its stream.
void check_streams(course::TcpComm& comm, std::vector<std::string>& failures) {
  const std::vector<size_t> sizes = {
      0, 1, 7, 4096, (256u << 10) - 1, 256u << 10, (256u << 10) + 1, (3u << 20) + 5};
  const int me = comm.rank();
  for (int peer = 0; peer < comm.size(); ++peer) {
    if (peer == me) continue;
    course::ByteStream& stream = comm.stream(peer);
    // The lower rank sends first on its sender thread; both receive on this thread.
    course::WorkPtr sends = comm.send_channel(peer).submit(
        [&stream, &sizes, me, peer, timeout = comm.timeout()] {
          for (size_t index = 0; index < sizes.size(); ++index) {
            std::vector<uint8_t> out(sizes[index]);
            for (size_t i = 0; i < out.size(); ++i) out[i] = stream_byte(me, peer, index, i);
            stream.send_all(out.data(), out.size(), timeout);
          }
        },
        "stream check to rank " + std::to_string(peer));
    for (size_t index = 0; index < sizes.size(); ++index) {
      std::vector<uint8_t> in(sizes[index]);
      stream.recv_all(in.data(), in.size(), comm.timeout());
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != stream_byte(peer, me, index, i)) {
          failures.push_back("byte " + std::to_string(i) + " of message " + std::to_string(index) +
                             " (" + std::to_string(in.size()) + " bytes) from rank " +
                             std::to_string(peer) + " is wrong");
          break;
        }
      }
    }
    sends->wait(comm.timeout());
  }
}

course::Verdict run_check(course::DriverContext& ctx) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  // First your channel alone, full and empty (channel_self_check.h).
  const std::string wrong = course::self_check_shm_channel();
  if (!wrong.empty()) return course::Verdict::fail("self-check: " + wrong);
  auto pg = course::make_process_group("tcp", ctx.store(), rank, world,
                                       lesson_recipe(ctx, "lesson12", g_transport));
  auto& comm = static_cast<course::TcpProcessGroup&>(*pg).comm();
  if (rank == 0) {
    std::string kinds;
    if (world > 1) kinds = comm.stream(1).kind();
    std::cout << "transport " << g_transport << " (rank 0 to rank 1: " << kinds << "), " << world
              << " rank(s), " << course::available_cores() << " core(s)" << std::endl;
  }
  course::ResultHash hash;
  course::ResultChecker checker;
  std::vector<std::string>& failures = checker.failures;

  check_streams(comm, failures);
  if (rank == 0) std::cout << "streams: every byte of 8 message sizes, both ways" << std::endl;

  std::vector<size_t> counts = course::collective_counts(world);
  counts.push_back((size_t{1} << 20) + 3);
  for (size_t count : counts) {
    for (ReduceOp op : course::all_reduce_ops()) {
      std::vector<float> data = course::reduce_values(rank, count);
      pg->all_reduce(data, op);
      hash.add(data);
      checker.check(course::reduce_call_name("all_reduce", count, op), data,
                    course::expected_reduce(op, world, count), course::tolerance(op));
    }
    std::vector<float> data = course::data_values(rank, count);
    pg->broadcast(data, 0);
    checker.check("broadcast of " + std::to_string(count), data,
                  course::expected_broadcast(0, count));
    std::vector<float> all(count * static_cast<size_t>(world));
    pg->all_gather(course::data_values(rank, count), all);
    checker.check("all_gather of " + std::to_string(count), all,
                  course::expected_gather(world, count));
    hash.add(all);
  }
  pg->barrier();
  if (rank == 0) {
    std::cout << "all_reduce (5 ops), broadcast, all_gather of " << counts.size()
              << " counts checked" << std::endl;
  }

  ctx.store().set("lesson12/hash/" + std::to_string(rank), std::to_string(hash.value()));
  for (int r = 0; r < world; ++r) {
    if (ctx.store().get("lesson12/hash/" + std::to_string(r)) != std::to_string(hash.value())) {
      failures.push_back("results differ between rank " + std::to_string(r) + " and rank " +
                         std::to_string(rank));
    }
  }
  if (!failures.empty()) {
    return course::Verdict::fail(std::to_string(failures.size()) + " problem(s) on rank " +
                                 std::to_string(rank) + ", first: " + failures.front());
  }
  return course::Verdict::pass("every byte in order over " + g_transport +
                               ", collectives match the oracle, identical on every rank");
}

course::Verdict run_bench(course::DriverContext& ctx) {
  course::ShmBenchOptions options = g_bench;
  if (options.csv_path.empty()) {
    options.csv_path = "bench-results/lesson12_np" + std::to_string(ctx.world()) + ".csv";
  }
  const long wrong = course::run_shm_bench(ctx, options, std::cout);
  if (wrong != 0) {
    return course::Verdict::fail("the benchmark's check found " + std::to_string(wrong) +
                                 " wrong element(s) (#wrong column)");
  }
  return course::Verdict::pass("benchmark done, #wrong 0 everywhere");
}

course::Verdict run_rank(course::DriverContext& ctx) {
  course::parse_transport(g_transport);
  return ctx.args().bench ? run_bench(ctx) : run_check(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson12";
  config.title = "a shared-memory transport for the ranks of one machine";
  config.default_np = 2;
  config.has_bench = true;
  g_bench.sweep.min_bytes = 1u << 20;
  g_bench.sweep.iterations = 10;
  g_bench.sweep.warmup = 3;
  const auto add_options = [](CLI::App& app) {
    app.add_option("--transport", g_transport,
                   "tcp (sockets), shm (shared memory) or auto (shm between ranks of this "
                   "machine, tcp otherwise)")
        ->capture_default_str();
    course::add_sweep_flags(app, g_bench.sweep);
    app.add_option("--csv", g_bench.csv_path,
                   "--bench: CSV file (default bench-results/lesson12_np<N>.csv)");
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
