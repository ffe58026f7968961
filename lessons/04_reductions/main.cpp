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
// every rank got every result right (the checks: reductions_self_check.h). On tcp with 2 to 8
// ranks, your all_reduce_naive (32 MiB) and all_to_all_direct (16 MiB per block) also run once with
// messages larger than a socket buffers and a 10 s socket timeout: sends posted before the receives
// deadlock there, and the verdict says so within seconds.
#include <iostream>
#include <vector>

#include "driver.h"
#include "driver_recipe.h"
#include "full_mesh.h"
#include "handshake.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "reductions.h"
#include "reductions_self_check.h"
#include "result_checks.h"

namespace {

using course::TcpComm;

course::Verdict run_rank(course::DriverContext& ctx) {
  const size_t n = static_cast<size_t>(ctx.world());
  const std::vector<size_t> counts{0, 1, n + 1, 100003};
  const std::string backend = ctx.args().backend;
  course::ResultChecker checker;
  if (backend == "tcp") {
    {
      TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(),
                                             course::job_token(), ctx.advertise_host(), "mesh"));
      course::check_reductions(course::lesson_reductions(comm), counts, checker);
    }
    if (const std::string deadlock = course::check_large_messages(ctx, checker);
        !deadlock.empty()) {
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
    course::check_process_group(pg, checker);
  } else {
    auto pg = course::make_process_group(backend, ctx.store(), ctx.rank(), ctx.world(),
                                         course::driver_recipe(ctx, "lesson04"));
    course::check_reductions(course::group_reductions(*pg), counts, checker);
    course::check_process_group(*pg, checker);
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
