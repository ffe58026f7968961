// main.cpp: ./lesson03, one-to-all collectives on the course's own tcp backend.
//
//   make lesson03 && ./lesson03 --np 4        (any N from 1 to 64)
//
// Every rank connects the full mesh (lesson 01) and runs your lesson 03 functions with
// rank- and index-dependent inputs, for counts 0, 1, N+1 and 100003 and every root:
// broadcast_flat, broadcast_binomial_tree, scatter_flat, gather_flat; then
// barrier_dissemination, checked through the store (nobody may leave before everybody has
// arrived). Rank 0 then times a 16 MiB broadcast both ways, flat against tree. The verdict
// is PASS only if every rank got every result right.
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

namespace {

using course::TcpComm;

struct Checker {
  int rank = 0;
  std::vector<std::string> failures;
  void check(const std::string& call, std::span<const float> got, std::span<const float> want) {
    const std::string wrong = course::describe_wrong(got, want);
    if (wrong.empty()) return;
    if (failures.size() < 5) std::cout << call << ": " << wrong << std::endl;
    failures.push_back(call);
  }
};

void run_broadcasts(TcpComm& comm, const std::vector<size_t>& counts, Checker& checker) {
  using Broadcast = void (*)(TcpComm&, std::span<float>, int);
  const std::pair<const char*, Broadcast> algorithms[] = {
      {"broadcast_flat", course::broadcast_flat},
      {"broadcast_binomial_tree", course::broadcast_binomial_tree}};
  for (const auto& [name, broadcast] : algorithms) {
    for (size_t count : counts) {
      for (int root = 0; root < comm.size(); ++root) {
        std::vector<float> data = comm.rank() == root
                                      ? course::data_values(root, count)
                                      : course::data_values(comm.rank() + 100, count);
        broadcast(comm, data, root);
        checker.check(std::string(name) + " of " + std::to_string(count) + " from root " +
                          std::to_string(root),
                      data, course::expected_broadcast(root, count));
      }
    }
  }
}

void run_scatter_gather(TcpComm& comm, const std::vector<size_t>& counts, Checker& checker) {
  const int n = comm.size(), r = comm.rank();
  for (size_t k : counts) {
    for (int root = 0; root < n; ++root) {
      const std::string suffix =
          " of " + std::to_string(k) + " per rank, root " + std::to_string(root);
      const std::vector<float> input =
          r == root ? course::data_values(root, n * k) : std::vector<float>{};
      std::vector<float> block(k, -1.0f);
      course::scatter_flat(comm, input, block, root);
      checker.check("scatter_flat" + suffix, block, course::expected_scatter(root, r, k));

      std::vector<float> gathered(r == root ? n * k : 0, -1.0f);
      course::gather_flat(comm, course::data_values(r, k), gathered, root);
      if (r == root) checker.check("gather_flat" + suffix, gathered, course::expected_gather(n, k));
    }
  }
}

void run_barriers(TcpComm& comm, course::StoreClient& store, Checker& checker) {
  for (int round = 0; round < 3; ++round) {
    const std::string key = "lesson03/barrier/" + std::to_string(round);
    store.add(key, 1);
    course::barrier_dissemination(comm);
    const int64_t arrived = store.add(key, 0);
    if (arrived != comm.size()) {
      std::cout << "barrier " << round << ": left after only " << arrived << " of " << comm.size()
                << " ranks had arrived" << std::endl;
      checker.failures.push_back("barrier_dissemination");
    }
  }
}

// Flat against tree, 16 MiB from rank 0; the slowest rank's time is what counts, so
// every rank reports through a barrier.
void time_broadcasts(TcpComm& comm) {
  std::vector<float> data((16u << 20) / sizeof(float), 1.0f);
  const auto time_ms = [&](const std::function<void()>& broadcast) {
    course::barrier_dissemination(comm);
    const auto start = std::chrono::steady_clock::now();
    broadcast();
    course::barrier_dissemination(comm);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  const double flat = time_ms([&] { course::broadcast_flat(comm, data, 0); });
  const double tree = time_ms([&] { course::broadcast_binomial_tree(comm, data, 0); });
  if (comm.rank() == 0) {
    std::cout << "16 MiB broadcast on " << comm.size() << " ranks: flat "
              << course::format_fixed(flat, 1) << " ms, binomial tree "
              << course::format_fixed(tree, 1) << " ms" << std::endl;
  }
}

course::Verdict run_rank(course::DriverContext& ctx) {
  TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                         ctx.advertise_host()));
  const size_t n = static_cast<size_t>(ctx.world());
  const std::vector<size_t> counts{0, 1, n + 1, 100003};
  Checker checker{ctx.rank(), {}};
  run_broadcasts(comm, counts, checker);
  run_scatter_gather(comm, counts, checker);
  run_barriers(comm, ctx.store(), checker);
  if (!checker.failures.empty()) {
    return course::Verdict::fail(std::to_string(checker.failures.size()) +
                                 " wrong result(s) on rank " + std::to_string(ctx.rank()) +
                                 ", first: " + checker.failures.front());
  }
  time_broadcasts(comm);
  return course::Verdict::pass(
      "broadcast (flat, binomial tree), scatter, gather and barrier match the oracle for "
      "every root and counts 0, 1, N+1, 100003");
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson03";
  config.title = "one to all: broadcast (flat, binomial tree), scatter, gather, barrier";
  config.default_np = 4;
  return course::run_driver(argc, argv, config, nullptr, run_rank);
}
