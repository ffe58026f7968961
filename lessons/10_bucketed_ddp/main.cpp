// main.cpp: ./lesson10 (being written).
#include <CLI/CLI.hpp>

#include "ddp_bench.h"
#include "driver.h"
#include "handshake.h"
#include "full_mesh.h"
#include "all_reduce_ring.h"
#include "process_group_factory.h"

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson10";
  config.title = "bucketed DDP";
  config.default_np = 2;
  config.backends = course::available_backends();
  config.has_bench = true;
  course::DdpBenchOptions bench;
  return course::run_driver(
      argc, argv, config,
      [&](CLI::App& app) {
        app.add_option("--bench-steps", bench.steps, "timed steps per row");
        app.add_option("--bench-batch", bench.batch_size, "per-rank batch");
      },
      [&](course::DriverContext& ctx) {
        course::GroupRecipe recipe;
        recipe.name = "lesson10";
        recipe.host = ctx.advertise_host();
        recipe.token = course::job_token();
        recipe.connect_mesh = course::connect_full_mesh;
        recipe.install = course::install_lesson05;
        auto pg = course::make_process_group(ctx.args().backend, ctx.store(), ctx.rank(),
                                             ctx.world(), recipe);
        return course::run_ddp_bench(*pg, bench);
      });
}
