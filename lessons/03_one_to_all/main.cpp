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
// barrier instead, so you can compare (one_to_all_self_check.h). The verdict is PASS only
// if every rank got every result right.
#include <iostream>

#include "driver.h"
#include "driver_recipe.h"
#include "full_mesh.h"
#include "handshake.h"
#include "one_to_all.h"
#include "one_to_all_self_check.h"
#include "process_group_factory.h"

namespace {

using course::TcpComm;

course::Verdict run_rank(course::DriverContext& ctx) {
  const std::string backend = ctx.args().backend;
  if (backend != "tcp") {
    auto pg = course::make_process_group(backend, ctx.store(), ctx.rank(), ctx.world(),
                                         course::driver_recipe(ctx, "lesson03"));
    return course::run_one_to_all_checks(course::group_one_to_all(*pg), ctx, " on " + backend);
  }
  // Every call here moves 16 MiB at most: 10 s without progress is a deadlock, not slowness.
  TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                         ctx.advertise_host()),
               course::Millis(10'000));
  try {
    return course::run_one_to_all_checks(course::lesson_one_to_all(comm), ctx, "");
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
