// main.cpp: ./lesson04, reductions on the course's own tcp backend.
//
//   make lesson04 && ./lesson04 --np 4        (any N from 1 to 64)
//   ./lesson04 --np 4 --backend gloo          the same checks on the real Gloo
//
// With --backend tcp (the default) every rank connects the full mesh (lesson 01), and runs your
// lesson 04 functions on inputs that depend on rank and index (collective_oracle.h: powers of two,
// so every result is exact), for counts 0, 1, N+1 and 100003 and every op (sum, prod, min, max,
// avg): reduce_binomial_tree to every root, all_reduce_naive, all_gather_naive,
// reduce_scatter_naive and all_to_all_direct, each checked against a serial oracle. Then
// the same calls go through the tcp ProcessGroup that your lessons 02-04 make up. With
// --backend gloo the same checks call a GlooProcessGroup's reduce, all_reduce, all_gather,
// reduce_scatter and all_to_all instead, so you can compare. The verdict is PASS only if
// every rank got every result right. On tcp with 2 to 8 ranks, your all_reduce_naive
// (32 MiB) and all_to_all_direct (16 MiB per block) also run once with messages larger
// than a socket buffers and a 10 s socket timeout: sends posted before the receives
// deadlock there, and the verdict says so within seconds.
#include <functional>
#include <iostream>
#include <vector>

#include "collective_oracle.h"
#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "reductions.h"
#include "result_checks.h"

namespace {

using course::ReduceOp;
using course::TcpComm;

using Checker = course::ResultChecker;
using course::reduce_call_name;

// The calls under test: your lesson functions on a TcpComm, or a ProcessGroup's.
struct Reductions {
  using InPlace = std::function<void(std::span<float>, ReduceOp)>;
  using Reducing = std::function<void(std::span<const float>, std::span<float>, ReduceOp)>;
  using Moving = std::function<void(std::span<const float>, std::span<float>)>;
  int rank = 0, size = 0;
  std::string prefix;  // put before every name below
  std::string reduce_name, all_reduce_name, reduce_scatter_name, all_gather_name, all_to_all_name;
  std::function<void(std::span<float>, ReduceOp, int root)> reduce;
  bool reduce_keeps_non_root = true;  // the lesson's reduce leaves non-roots' data alone
  InPlace all_reduce;
  Reducing reduce_scatter;
  Moving all_gather, all_to_all;
};

Reductions lesson_functions(TcpComm& comm) {
  return {
      comm.rank(),
      comm.size(),
      "",
      "reduce_binomial_tree",
      "all_reduce_naive",
      "reduce_scatter_naive",
      "all_gather_naive",
      "all_to_all_direct",
      [&comm](auto data, ReduceOp op, int root) {
        course::reduce_binomial_tree(comm, data, op, root);
      },
      true,
      [&comm](auto data, ReduceOp op) { course::all_reduce_naive(comm, data, op); },
      [&comm](auto in, auto out, ReduceOp op) { course::reduce_scatter_naive(comm, in, out, op); },
      [&comm](auto in, auto out) { course::all_gather_naive(comm, in, out); },
      [&comm](auto in, auto out) { course::all_to_all_direct(comm, in, out); }};
}

Reductions group_functions(course::ProcessGroup& pg) {
  return {pg.rank(),
          pg.size(),
          "ProcessGroup::",
          "reduce",
          "all_reduce",
          "reduce_scatter",
          "all_gather",
          "all_to_all",
          [&pg](auto data, ReduceOp op, int root) { pg.reduce(data, op, root); },
          false,  // the contract leaves non-roots' data unspecified
          [&pg](auto data, ReduceOp op) { pg.all_reduce(data, op); },
          [&pg](auto in, auto out, ReduceOp op) { pg.reduce_scatter(in, out, op); },
          [&pg](auto in, auto out) { pg.all_gather(in, out); },
          [&pg](auto in, auto out) { pg.all_to_all(in, out); }};
}

void run_reductions(const Reductions& ops, const std::vector<size_t>& counts, Checker& checker) {
  const int n = ops.size, r = ops.rank;
  const std::string& p = ops.prefix;
  for (size_t count : counts) {
    for (ReduceOp op : course::all_reduce_ops()) {
      const float tol = course::tolerance(op);
      for (int root = 0; root < n; ++root) {
        std::vector<float> data = course::reduce_values(r, count);
        ops.reduce(data, op, root);
        if (r != root && !ops.reduce_keeps_non_root) continue;
        const std::vector<float> want =
            r == root ? course::expected_reduce(op, n, count) : course::reduce_values(r, count);
        checker.check(reduce_call_name(p + ops.reduce_name, count, op) + " to root " +
                          std::to_string(root) + (r == root ? "" : " (left unchanged here)"),
                      data, want, tol);
      }
      std::vector<float> data = course::reduce_values(r, count);
      ops.all_reduce(data, op);
      checker.check(reduce_call_name(p + ops.all_reduce_name, count, op), data,
                    course::expected_reduce(op, n, count), tol);

      const std::vector<float> input = course::reduce_values(r, n * count);
      std::vector<float> block(count, -1.0f);
      ops.reduce_scatter(input, block, op);
      checker.check(reduce_call_name(p + ops.reduce_scatter_name, count, op) + " per rank", block,
                    course::expected_reduce_scatter(op, n, r, count), tol);
    }
    std::vector<float> gathered(n * count, -1.0f);
    ops.all_gather(course::data_values(r, count), gathered);
    checker.check(p + ops.all_gather_name + " of " + std::to_string(count) + " per rank", gathered,
                  course::expected_gather(n, count));

    std::vector<float> exchanged(n * count, -1.0f);
    ops.all_to_all(course::data_values(r, n * count), exchanged);
    checker.check(p + ops.all_to_all_name + " of " + std::to_string(count) + " per block",
                  exchanged, course::expected_all_to_all(n, r, count));
  }
}

// The same through the ProcessGroup interface: what lessons 09-11 will call.
void run_process_group(course::ProcessGroup& pg, Checker& checker) {
  const int n = pg.size(), r = pg.rank();
  const size_t count = 1000 + n;
  for (ReduceOp op : course::all_reduce_ops()) {
    std::vector<float> data = course::reduce_values(r, count);
    pg.all_reduce(data, op);
    checker.check(reduce_call_name("ProcessGroup::all_reduce", count, op), data,
                  course::expected_reduce(op, n, count), course::tolerance(op));
  }
  std::vector<float> async = course::reduce_values(r, count);
  course::WorkPtr work = pg.all_reduce_async(async, ReduceOp::SUM);
  work->wait();
  checker.check(reduce_call_name("ProcessGroup::all_reduce_async", count, ReduceOp::SUM), async,
                course::expected_reduce(ReduceOp::SUM, n, count));
}

// Messages larger than a socket buffers, on a mesh of their own (fresh sockets start with
// small buffers) with a 10 s socket timeout: an all-reduce of 32 MiB and an all-to-all of
// 16 MiB per block. Ranks that all send before they receive deadlock here and fail in
// seconds, saying so, instead of passing because every small message fit in the kernel.
// 2 to 8 ranks. Returns the deadlock's description, or "" when the calls returned.
std::string large_case(course::DriverContext& ctx, Checker& checker) {
  const int n = ctx.world(), r = ctx.rank();
  if (n < 2 || n > 8) return "";
  TcpComm comm(course::connect_full_mesh(ctx.store(), r, n, course::job_token(),
                                         ctx.advertise_host(), "large"),
               course::Millis(10'000));
  const Reductions ops = lesson_functions(comm);
  std::string call;
  try {
    const size_t count = size_t{8} << 20;
    call = ops.all_reduce_name + " of 32 MiB (sum)";
    std::vector<float> data = course::reduce_values(r, count);
    ops.all_reduce(data, ReduceOp::SUM);
    checker.check(call, data, course::expected_reduce(ReduceOp::SUM, n, count));
    const size_t k = size_t{4} << 20;
    call = ops.all_to_all_name + " of 16 MiB per block";
    std::vector<float> output(n * k, -1.0f);
    ops.all_to_all(course::data_values(r, n * k), output);
    checker.check(call, output, course::expected_all_to_all(n, r, k));
  } catch (const course::TimeoutError& e) {
    return "deadlock in " + call + " on rank " + std::to_string(r) +
           ": nothing moved for 10 s with messages larger than a socket buffers; ranks that "
           "all send before they receive wait for each other forever (post the receives "
           "first, or isend). The error: " +
           e.detail();
  }
  if (r == 0) {
    std::cout << "all_reduce_naive of 32 MiB and all_to_all_direct of 16 MiB per block "
              << "(more than a socket buffers) checked" << std::endl;
  }
  return "";
}

course::Verdict run_rank(course::DriverContext& ctx) {
  const size_t n = static_cast<size_t>(ctx.world());
  const std::vector<size_t> counts{0, 1, n + 1, 100003};
  const std::string backend = ctx.args().backend;
  Checker checker;
  if (backend == "tcp") {
    {
      TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(),
                                             course::job_token(), ctx.advertise_host(), "mesh"));
      run_reductions(lesson_functions(comm), counts, checker);
    }
    if (const std::string deadlock = large_case(ctx, checker); !deadlock.empty()) {
      return course::Verdict::fail(deadlock);
    }
    course::TcpAlgorithms algorithms;
    course::install_lesson04(algorithms);
    if (ctx.rank() == 0) {
      std::cout << "tcp backend: all_reduce = " << algorithms.names["all_reduce"]
                << "; reduce = " << algorithms.names["reduce"] << std::endl;
    }
    course::TcpProcessGroup pg(
        course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                  ctx.advertise_host(), "pg"),
        algorithms);
    run_process_group(pg, checker);
  } else {
    course::GroupRecipe recipe;
    recipe.name = "lesson04";
    recipe.host = ctx.advertise_host();
    recipe.token = course::job_token();
    auto pg = course::make_process_group(backend, ctx.store(), ctx.rank(), ctx.world(), recipe);
    run_reductions(group_functions(*pg), counts, checker);
    run_process_group(*pg, checker);
  }
  const std::string on = backend == "tcp" ? "" : " on " + backend;
  if (!checker.failures.empty()) {
    return course::Verdict::fail(std::to_string(checker.failures.size()) +
                                 " wrong result(s) on rank " + std::to_string(ctx.rank()) + on +
                                 ", first: " + checker.failures.front());
  }
  return course::Verdict::pass(
      "reduce, all_reduce, all_gather, reduce_scatter, all_to_all match the oracle for every "
      "op, root and counts 0, 1, N+1, 100003" +
      on);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson04";
  config.title = "reductions: reduce, all_reduce (naive), all_gather, reduce_scatter, all_to_all";
  config.default_np = 4;
  config.backends = course::available_backends();
  return course::run_driver(argc, argv, config, nullptr, run_rank);
}
