// main.cpp: ./lesson15, tensor parallelism: Megatron-LM's column- and row-parallel layers,
// their f/g operators and a vocabulary-parallel loss, alone or on a 2D (data x tensor) grid.
//
//   make lesson15 && ./lesson15                          # 4 ranks, --tp 4
//   ./lesson15 --np 4 --tp 2                             # 2 replicas of a 2-way split model
//   ./lesson15 --np 2 --tp 2 --hidden 256 --blocks 3 --optimizer adam
//   ./lesson15 --bench --np 4                            # TP 1 (DDP), 2, 4 per batch size
//
// First a self-check of your operators, layers and loss against serial oracles
// (tp_self_check.h), on the world group. Then every rank trains its shards of the residual
// MLP (tp_model.h) on Fashion-MNIST (tp_training.h). PASS needs the first steps equal to
// one process's on the global batch, the full model identical on every replica and 85%
// test accuracy within 3 epochs (--target).
#include <cstdlib>
#include <iostream>

#include "device_mesh.h"
#include "driver.h"
#include "driver_prologue.h"
#include "driver_recipe.h"
#include "emulated_link.h"
#include "env.h"
#include "flags.h"
#include "process_group_factory.h"
#include "ring_allreduce.h"
#include "subgroups.h"
#include "tp_bench.h"
#include "tp_self_check.h"
#include "tp_training.h"
#include "tp_training_flags.h"

namespace {

course::TpTrainingOptions g_training;

course::Verdict run_rank(course::DriverContext& ctx) {
  // First: your operators, layers and loss against their oracles, on the world group. (The
  // driver has checked the flags against the world and compared them across the ranks.)
  course::DriverStart start =
      course::start_driver(ctx, {.group = "lesson15",
                                 .install = course::install_lesson05,
                                 .device = "",  // lesson 15 trains on the CPU
                                 .header = course::link_header(),
                                 .self_check = course::run_lesson15_self_check,
                                 .self_check_passed = course::kLesson15SelfCheckPassed});
  if (start.failed) return *start.failed;
  course::ProcessGroup& world = *start.group;
  // The mesh's groups: new_group / init_device_mesh over the world (subgroups.h).
  course::Subgroups subgroups(
      ctx.store(), ctx.rank(), ctx.world(),
      course::group_maker(ctx.args().backend,
                          course::driver_recipe(ctx, "lesson15", course::install_lesson05)));
  if (ctx.args().bench) {
    return course::run_tp_bench(g_training, world, subgroups, {.csv_path = ctx.bench_csv()},
                                std::cout);
  }
  const course::DeviceMesh mesh =
      course::init_device_mesh(subgroups, course::tp_mesh_dims(ctx.world(), g_training.tp));
  if (ctx.rank() == 0) std::cout << "device mesh " << mesh.layout().describe() << std::endl;
  return course::run_tp_training(g_training, mesh, world, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson15";
  config.title = "tensor parallelism: column- and row-parallel layers, a 2D grid";
  config.default_np = 4;
  config.backends = course::available_backends();  // host memory: tcp, gloo
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson15_tp.csv";
  config.has_link = true;
  config.check_flags = [](const course::DriverArgs& args) {
    // Ranks started by hand (RANK set) count WORLD_SIZE, a launch counts --np.
    const int world = course::started_as_rank() ? course::read_dist_env().world_size : args.np;
    return course::tp_flags_problem(world, g_training);
  };
  const auto add_options = [](course::Flags& flags) {
    course::add_tp_training_flags(flags, g_training);
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
