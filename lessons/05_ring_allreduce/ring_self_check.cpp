// ring_self_check.cpp: lesson 05, given: the driver's check (see the header).
#include "ring_self_check.h"

#include <iostream>
#include <vector>

#include "all_reduce_ring.h"
#include "collective_oracle.h"
#include "driver_recipe.h"
#include "full_mesh.h"
#include "handshake.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "result_checks.h"
#include "ring_allreduce.h"

namespace course {
namespace {

// Segments of 16 MiB, more than a loopback socket buffers: a ring that sends a whole
// segment before it receives deadlocks here, and a socket timeout of 10 s turns that into
// a FAIL saying so instead of a two-minute hang. It runs on a mesh of its own: sockets
// that have already carried large transfers grow their buffers (up to tcp_rmem's maximum)
// and might hold a whole segment. Up to 8 ranks. Returns the deadlock's description, or
// "" when the call returned.
template <typename Check>
std::string large_case(DriverContext& ctx, const Check& check) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  if (world < 2 || world > 8) return "";
  TcpComm comm(connect_full_mesh(ctx.store(), rank, world, job_token(), ctx.advertise_host(),
                                 "lesson05/large"),
               Millis(10'000));
  const size_t count = static_cast<size_t>(world) * (size_t{4} << 20) + 3;
  std::vector<float> data = reduce_values(rank, count);
  try {
    all_reduce_ring(comm, data, ReduceOp::SUM);
  } catch (const TimeoutError& e) {
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

}  // namespace

Verdict run_ring_check(DriverContext& ctx) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  const size_t n = static_cast<size_t>(world);
  std::vector<size_t> counts = collective_counts(world);
  counts.push_back((size_t{1} << 20) + 3);  // 4 MiB: many chunks per segment

  const std::string backend = ctx.args().backend;
  auto pg = make_process_group(backend, ctx.store(), rank, world,
                               driver_recipe(ctx, "lesson05", install_lesson05));
  if (rank == 0) {
    std::cout << "backend " << backend << ", all_reduce = "
              << (backend == "tcp" ? "ring (lesson 05): your all_reduce_ring"
                                   : "gloo::allreduce (ring)")
              << ", " << world << " rank(s)" << std::endl;
  }

  ResultHash hash;
  ResultChecker checker;
  std::vector<std::string>& failures = checker.failures;
  const auto check = [&](const std::string& call, std::span<const float> got, ReduceOp op,
                         size_t count) {
    hash.add(got);
    checker.check(call, got, expected_reduce(op, world, count), tolerance(op));
  };
  const auto call_name = reduce_call_name;

  for (size_t count : counts) {
    for (ReduceOp op : all_reduce_ops()) {
      std::vector<float> data = reduce_values(rank, count);
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
    auto& comm = static_cast<TcpProcessGroup&>(*pg).comm();
    for (size_t chunk : {size_t{1}, size_t{3}}) {
      for (ReduceOp op : all_reduce_ops()) {
        const size_t count = 7 * n + 3;
        std::vector<float> data = reduce_values(rank, count);
        all_reduce_ring(comm, data, op, chunk);
        check(call_name("all_reduce_ring", count, op) + " in chunks of " + std::to_string(chunk),
              data, op, count);
      }
    }
    if (rank == 0)
      std::cout << "all_reduce_ring in chunks of 1 and 3 elements checked" << std::endl;
    if (const std::string deadlock = large_case(ctx, check); !deadlock.empty()) {
      return Verdict::fail(deadlock);
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
    return Verdict::fail(std::to_string(failures.size()) + " problem(s) on rank " +
                         std::to_string(rank) + ", first: " + failures.front());
  }
  return Verdict::pass(
      "all_reduce (" + backend + ") matches the oracle for " + std::to_string(counts.size()) +
      " counts x 5 ops" +
      (backend == "tcp" && world >= 2 && world <= 8 ? ", the ring with 16 MiB segments too" : "") +
      ", identical on every rank");
}

}  // namespace course
