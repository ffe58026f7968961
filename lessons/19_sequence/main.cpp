// main.cpp: ./lesson19, the sequence dimension across ranks: lesson 17's GPT with each
// sequence split over a context-parallel group, by ring attention or Ulysses, and its heads
// over a tensor-parallel group with sequence parallelism, on a dp x cp x tp device mesh.
//
//   make lesson19 && ./lesson19                          # 4 ranks: dp 2 x cp 2, ring, zig-zag
//   ./lesson19 --np 4 --cp 4 --layout contiguous
//   ./lesson19 --np 2 --cp-attention ulysses     # dp 1 x cp 2
//   ./lesson19 --np 4 --cp 2 --tp 2              # cp 2 x tp 2, sequence parallelism on
//   ./lesson19 --bench --np 4 [--link 10gbit]            # memory, bytes and time per layout
//
// First a self-check of your ring attention and Ulysses against one process's attention on
// the whole sequence (cp_self_check.h), on the mesh's cp group. Then cp_training.h: a few
// steps against one process (the parameters must agree), and the training run. PASS needs
// the agreement and the GPT's validation loss below the bigram's by --margin.
#include <iostream>
#include <memory>
#include <vector>

#include "cp_bench.h"
#include "cp_self_check.h"
#include "cp_training.h"
#include "cp_training_flags.h"
#include "device_mesh.h"
#include "driver.h"
#include "driver_recipe.h"
#include "emulated_link.h"
#include "env.h"
#include "flags.h"
#include "process_group_factory.h"
#include "sharding.h"
#include "subgroups.h"

namespace {

course::CpTrainingOptions g_training;

course::Verdict run_rank(course::DriverContext& ctx) {
  course::print_driver_header(ctx, course::link_header());
  course::Subgroups world(
      ctx.store(), ctx.rank(), ctx.world(),
      course::group_maker(ctx.args().backend,
                          course::driver_recipe(ctx, "lesson19", course::install_lesson13)));
  const bool bench = ctx.args().bench;  // the bench's mesh: every rank in cp (its table 4: in tp)
  const course::DeviceMesh mesh =
      course::init_cp_mesh(world, bench ? 0 : g_training.cp, bench ? 1 : g_training.tp);
  if (auto failed =
          course::self_check_failure(ctx, course::run_lesson19_self_check(*mesh.group("cp")),
                                     course::kLesson19SelfCheckPassed)) {
    return *failed;
  }
  std::vector<int> every_rank(static_cast<size_t>(ctx.world()));
  for (int r = 0; r < ctx.world(); ++r) every_rank[static_cast<size_t>(r)] = r;
  std::shared_ptr<course::ProcessGroup> all = world.new_group(every_rank, "all");
  if (ctx.args().bench)
    return course::run_cp_bench(g_training, mesh, *all, ctx.bench_csv(), std::cout);
  return course::run_cp_training(g_training, mesh, *all, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson19";
  config.title = "the sequence dimension: ring attention, Ulysses and SP on a dp x cp x tp mesh";
  config.default_np = 4;
  config.backends = {"tcp", "gloo"};
  config.has_bench = true;
  config.has_link = true;
  config.check_flags = [](const course::DriverArgs& args) {
    const int world = course::started_as_rank() ? course::read_dist_env().world_size : args.np;
    course::CpTrainingOptions o = g_training;
    if (args.bench) {
      o.cp = 0;
      o.tp = 1;
    }
    return course::check_cp_training_flags(o, world);
  };
  return course::run_driver(
      argc, argv, config,
      [](course::Flags& flags) { course::add_cp_training_flags(flags, g_training); }, run_rank);
}
