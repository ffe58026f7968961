// driver_env.h: a forked test rank made into one rank of a driver's job, as torchrun
// starts it.
//
// set_driver_env(ctx) sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (a free port, chosen
// by rank 0 and agreed through the harness's store) and COURSE_JOB_TOKEN, so that
// run_driver() called next in this process is this rank of a job of ctx.world ranks
// (common/runtime/driver.h), without a launcher.
#pragma once

#include <cstdlib>
#include <string>

#include "harness.h"
#include "socket.h"

namespace course::test {

inline void set_driver_env(RankContext& ctx) {
  if (ctx.rank == 0) ctx.store().set("driver-port", std::to_string(find_free_port()));
  ::setenv("RANK", std::to_string(ctx.rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(ctx.world).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", ctx.store().get("driver-port").c_str(), 1);
  ::setenv("COURSE_JOB_TOKEN", ctx.token.c_str(), 1);
}

}  // namespace course::test
