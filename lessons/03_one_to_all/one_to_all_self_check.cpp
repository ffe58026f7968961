// one_to_all_self_check.cpp: lesson 03, given: the driver's checks (see the header).
#include "one_to_all_self_check.h"

#include <chrono>
#include <iostream>

#include "bench_table.h"
#include "collective_oracle.h"
#include "one_to_all.h"
#include "result_checks.h"

namespace course {
namespace {

using Checker = ResultChecker;

void run_broadcasts(const OneToAll& ops, const std::vector<size_t>& counts, Checker& checker) {
  for (const auto& [name, label, broadcast] : ops.broadcasts) {
    for (size_t count : counts) {
      for (int root = 0; root < ops.size; ++root) {
        std::vector<float> data =
            ops.rank == root ? data_values(root, count) : data_values(ops.rank + 100, count);
        broadcast(data, root);
        checker.check(name + " of " + std::to_string(count) + " from root " + std::to_string(root),
                      data, expected_broadcast(root, count));
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
      const std::vector<float> input = r == root ? data_values(root, n * k) : std::vector<float>{};
      std::vector<float> block(k, -1.0f);
      ops.scatter(input, block, root);
      checker.check(ops.scatter_name + suffix, block, expected_scatter(root, r, k));

      std::vector<float> gathered(r == root ? n * k : 0, -1.0f);
      ops.gather(data_values(r, k), gathered, root);
      if (r == root) checker.check(ops.gather_name + suffix, gathered, expected_gather(n, k));
    }
  }
}

void run_barriers(const OneToAll& ops, StoreClient& store, Checker& checker) {
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
    times += (times.empty() ? "" : ", ") + label + " " + format_fixed(ms, 1) + " ms";
  }
  if (ops.rank == 0) {
    std::cout << "16 MiB broadcast on " << ops.size << " ranks: " << times << std::endl;
  }
}

}  // namespace

OneToAll lesson_one_to_all(TcpComm& comm) {
  return {comm.rank(),
          comm.size(),
          {{"broadcast_flat", "flat",
            [&comm](auto data, int root) { broadcast_flat(comm, data, root); }},
           {"broadcast_binomial_tree", "binomial tree",
            [&comm](auto data, int root) { broadcast_binomial_tree(comm, data, root); }}},
          "scatter_flat",
          "gather_flat",
          "barrier_dissemination",
          [&comm](auto in, auto out, int root) { scatter_flat(comm, in, out, root); },
          [&comm](auto in, auto out, int root) { gather_flat(comm, in, out, root); },
          [&comm] { barrier_dissemination(comm); }};
}

OneToAll group_one_to_all(ProcessGroup& pg) {
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

Verdict run_one_to_all_checks(const OneToAll& ops, DriverContext& ctx, const std::string& on) {
  const size_t n = static_cast<size_t>(ctx.world());
  const std::vector<size_t> counts{0, 1, n + 1, 100003};
  Checker checker;
  run_broadcasts(ops, counts, checker);
  run_scatter_gather(ops, counts, checker);
  run_barriers(ops, ctx.store(), checker);
  if (!checker.failures.empty()) {
    return Verdict::fail(std::to_string(checker.failures.size()) + " wrong result(s) on rank " +
                         std::to_string(ctx.rank()) + on + ", first: " + checker.failures.front());
  }
  time_broadcasts(ops);
  return Verdict::pass(
      (on.empty() ? "broadcast (flat, binomial tree)" : "broadcast") +
      std::string(", scatter, gather and barrier match the oracle for every root and counts 0, "
                  "1, N+1, 100003") +
      on);
}

}  // namespace course
