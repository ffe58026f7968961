// main.cpp: ./lesson03, one-to-all collectives on the course's own tcp backend.
//
//   make lesson03 && ./lesson03 --np 4        (any N from 1 to 64)
//   ./lesson03 --np 4 --backend gloo          the same checks on the real Gloo
//
// With --backend tcp (the default) every rank connects the full mesh (lesson 01) and runs
// your lesson 03 functions with
// rank- and index-dependent inputs, for counts 0, 1, N+1 and 100003 and every root:
// broadcast_flat, broadcast_binomial_tree, scatter_flat, gather_flat; then
// barrier_dissemination, checked through the store (nobody may leave before everybody has
// arrived). Rank 0 then times a 16 MiB broadcast both ways, flat against tree. With
// --backend gloo the same checks call a GlooProcessGroup's broadcast, scatter, gather and
// barrier instead, so you can compare. The verdict is PASS only if every rank got every
// result right.
#include <chrono>
#include <functional>
#include <iostream>
#include <vector>

#include "bench_table.h"
#include "collective_oracle.h"
#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "one_to_all.h"
#include "process_group_factory.h"
#include "result_checks.h"

namespace {

using course::TcpComm;

using Checker = course::ResultChecker;

// The calls under test: your lesson functions on a TcpComm, or a ProcessGroup's.
struct OneToAll {
  using Broadcast = std::function<void(std::span<float>, int root)>;
  using Rooted = std::function<void(std::span<const float>, std::span<float>, int root)>;
  struct NamedBroadcast {
    std::string name, label;  // label: in the timing line
    Broadcast call;
  };
  int rank = 0, size = 0;
  std::vector<NamedBroadcast> broadcasts;
  std::string scatter_name, gather_name, barrier_name;
  Rooted scatter, gather;
  std::function<void()> barrier;
};

OneToAll lesson_functions(TcpComm& comm) {
  return {comm.rank(),
          comm.size(),
          {{"broadcast_flat", "flat",
            [&comm](auto data, int root) { course::broadcast_flat(comm, data, root); }},
           {"broadcast_binomial_tree", "binomial tree",
            [&comm](auto data, int root) { course::broadcast_binomial_tree(comm, data, root); }}},
          "scatter_flat",
          "gather_flat",
          "barrier_dissemination",
          [&comm](auto in, auto out, int root) { course::scatter_flat(comm, in, out, root); },
          [&comm](auto in, auto out, int root) { course::gather_flat(comm, in, out, root); },
          [&comm] { course::barrier_dissemination(comm); }};
}

OneToAll group_functions(course::ProcessGroup& pg) {
  const std::string prefix = "ProcessGroup::";
  return {pg.rank(),
          pg.size(),
          {{prefix + "broadcast", pg.backend(),
            [&pg](auto data, int root) { pg.broadcast(data, root); }}},
          prefix + "scatter",
          prefix + "gather",
          prefix + "barrier",
          [&pg](auto in, auto out, int root) { pg.scatter(in, out, root); },
          [&pg](auto in, auto out, int root) { pg.gather(in, out, root); },
          [&pg] { pg.barrier(); }};
}

void run_broadcasts(const OneToAll& ops, const std::vector<size_t>& counts, Checker& checker) {
  for (const auto& [name, label, broadcast] : ops.broadcasts) {
    for (size_t count : counts) {
      for (int root = 0; root < ops.size; ++root) {
        std::vector<float> data = ops.rank == root ? course::data_values(root, count)
                                                   : course::data_values(ops.rank + 100, count);
        broadcast(data, root);
        checker.check(name + " of " + std::to_string(count) + " from root " + std::to_string(root),
                      data, course::expected_broadcast(root, count));
      }
    }
  }
}

void run_scatter_gather(const OneToAll& ops, const std::vector<size_t>& counts, Checker& checker) {
  const int n = ops.size, r = ops.rank;
  for (size_t k : counts) {
    for (int root = 0; root < n; ++root) {
      const std::string suffix =
          " of " + std::to_string(k) + " per rank, root " + std::to_string(root);
      const std::vector<float> input =
          r == root ? course::data_values(root, n * k) : std::vector<float>{};
      std::vector<float> block(k, -1.0f);
      ops.scatter(input, block, root);
      checker.check(ops.scatter_name + suffix, block, course::expected_scatter(root, r, k));

      std::vector<float> gathered(r == root ? n * k : 0, -1.0f);
      ops.gather(course::data_values(r, k), gathered, root);
      if (r == root)
        checker.check(ops.gather_name + suffix, gathered, course::expected_gather(n, k));
    }
  }
}

void run_barriers(const OneToAll& ops, course::StoreClient& store, Checker& checker) {
  for (int round = 0; round < 3; ++round) {
    const std::string key = "lesson03/barrier/" + std::to_string(round);
    store.add(key, 1);
    ops.barrier();
    const int64_t arrived = store.add(key, 0);
    if (arrived != ops.size) {
      std::cout << "barrier " << round << ": left after only " << arrived << " of " << ops.size
                << " ranks had arrived" << std::endl;
      checker.failures.push_back(ops.barrier_name);
    }
  }
}

// Every broadcast, 16 MiB from rank 0; the slowest rank's time is what counts, so
// every rank reports through a barrier.
void time_broadcasts(const OneToAll& ops) {
  std::vector<float> data((16u << 20) / sizeof(float), 1.0f);
  std::string times;
  for (const auto& [name, label, broadcast] : ops.broadcasts) {
    ops.barrier();
    const auto start = std::chrono::steady_clock::now();
    broadcast(data, 0);
    ops.barrier();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    times += (times.empty() ? "" : ", ") + label + " " + course::format_fixed(ms, 1) + " ms";
  }
  if (ops.rank == 0) {
    std::cout << "16 MiB broadcast on " << ops.size << " ranks: " << times << std::endl;
  }
}

course::Verdict run_checks(const OneToAll& ops, course::DriverContext& ctx, const std::string& on) {
  const size_t n = static_cast<size_t>(ctx.world());
  const std::vector<size_t> counts{0, 1, n + 1, 100003};
  Checker checker;
  run_broadcasts(ops, counts, checker);
  run_scatter_gather(ops, counts, checker);
  run_barriers(ops, ctx.store(), checker);
  if (!checker.failures.empty()) {
    return course::Verdict::fail(std::to_string(checker.failures.size()) +
                                 " wrong result(s) on rank " + std::to_string(ctx.rank()) + on +
                                 ", first: " + checker.failures.front());
  }
  time_broadcasts(ops);
  return course::Verdict::pass(
      (on.empty() ? "broadcast (flat, binomial tree)" : "broadcast") +
      std::string(", scatter, gather and barrier match the oracle for every root and counts 0, "
                  "1, N+1, 100003") +
      on);
}

course::Verdict run_rank(course::DriverContext& ctx) {
  const std::string backend = ctx.args().backend;
  if (backend != "tcp") {
    course::GroupRecipe recipe;
    recipe.name = "lesson03";
    recipe.host = ctx.advertise_host();
    recipe.token = course::job_token();
    auto pg = course::make_process_group(backend, ctx.store(), ctx.rank(), ctx.world(), recipe);
    return run_checks(group_functions(*pg), ctx, " on " + backend);
  }
  // Every call here moves 16 MiB at most: 10 s without progress is a deadlock, not slowness.
  TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                         ctx.advertise_host()),
               course::Millis(10'000));
  try {
    return run_checks(lesson_functions(comm), ctx, "");
  } catch (const course::TimeoutError& e) {
    return course::Verdict::fail(
        "deadlock on rank " + std::to_string(ctx.rank()) +
        ": nothing moved for 10 s; a rank waits for a peer that is waiting too (a root that "
        "receives before it sends, or ranks that all send a message larger than the socket "
        "buffers before anyone receives). The error: " +
        e.detail());
  }
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson03";
  config.title = "one to all: broadcast (flat, binomial tree), scatter, gather, barrier";
  config.default_np = 4;
  config.backends = course::available_backends();
  return course::run_driver(argc, argv, config, nullptr, run_rank);
}
