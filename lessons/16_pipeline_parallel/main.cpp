// main.cpp: ./lesson16, pipeline parallelism: the model cut by depth into stages, the batch
// into micro-batches, and GPipe or 1F1B as the order each stage runs them.
//
//   make lesson16 && ./lesson16                                   # 4 ranks, 4 stages, 1F1B
//   ./lesson16 --np 4 --pp 4 --micro-batches 8 --schedule gpipe
//   ./lesson16 --np 4 --pp 2                                      # 2 replicas of 2 stages
//   ./lesson16 --bench --np 4 [--link 10gbit]
//   ./lesson16 --checkpoint mlp.safetensors   # the whole model, one process's names
//   ./lesson16 --np 2 --init mlp.safetensors  # any cut starts from it (pp_checkpoint.h)
//
// First a self-check of your schedule builder, schedule check and executor against the
// closed forms and one process (pp_self_check.h). Then every rank trains its stage of
// lesson 07's MLP (8 hidden layers by default) on Fashion-MNIST (pp_training.h). PASS needs
// 85% test accuracy within 4 epochs (--target). --bench: the bubble and activation memory
// of both schedules against their models (pp_bench.h).
#include <iostream>

#include "device_mesh.h"
#include "driver.h"
#include "driver_recipe.h"
#include "emulated_link.h"
#include "env.h"
#include "flag_checks.h"
#include "flags.h"
#include "pp_bench.h"
#include "pp_self_check.h"
#include "pp_training.h"
#include "process_group_factory.h"
#include "ring_allreduce.h"
#include "stage_runner.h"
#include "subgroups.h"
#include "training_flags.h"

namespace {

course::PipelineOptions g_training;
course::PipelineBenchOptions g_bench;

course::Verdict run_rank(course::DriverContext& ctx) {
  course::print_driver_header(ctx, course::link_header());
  // The device mesh {dp: D, pp: P} (world rank = replica * P + stage) is where each rank
  // learns its stage and replica and gets its groups (stage_runner.h). The bench runs one
  // pipeline of every rank.
  course::Subgroups world(
      ctx.store(), ctx.rank(), ctx.world(),
      course::group_maker(ctx.args().backend,
                          course::driver_recipe(ctx, "lesson16", course::install_lesson05)));
  const course::DeviceMesh mesh =
      course::init_pipeline_mesh(world, ctx.args().bench ? 0 : g_training.pp);
  // The prologue's steps (driver.h) around a self-check that runs on the mesh.
  if (auto failed = course::self_check_failure(ctx, course::run_lesson16_self_check(mesh),
                                               course::kLesson16SelfCheckPassed)) {
    return *failed;
  }
  if (ctx.rank() == 0) std::cout << course::deadlock_demonstration() << std::endl;
  if (ctx.args().bench) {
    g_bench.csv_path = ctx.bench_csv();
    g_bench.trace_prefix = ctx.args().trace;  // timelines of M = 8: PREFIX_gpipe.svg, ...
    return course::run_pipeline_bench(mesh, g_bench, std::cout);
  }
  if (ctx.rank() == 0 && mesh.size("dp") > 1) {
    std::cout << "device mesh: " << mesh.layout().describe() << std::endl;
  }
  return course::run_pipeline_training(g_training, mesh, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson16";
  config.title = "pipeline parallelism: stages, micro-batches, GPipe and 1F1B";
  config.default_np = 4;
  config.backends = {"tcp", "gloo"};  // the stages compute on the CPU
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson16_pipeline.csv";
  config.bench_trace = "bench-results/lesson16_timeline";
  config.has_link = true;
  config.check_flags = [](const course::DriverArgs& args) {
    // --pp against the effective world: ranks started by hand (RANK set) count WORLD_SIZE,
    // a launch counts --np. The one check of --pp (init_pipeline_mesh relies on it).
    const int world = course::started_as_rank() ? course::read_dist_env().world_size : args.np;
    return course::check_pipeline_flags(g_training, world);
  };
  const auto add_options = [](course::Flags& flags) {
    course::add_data_flags(flags, g_training,
                           "examples per step, all replicas together (each takes 1/D of them)");
    course::add_optimizer_flags(flags, g_training);
    flags.option("--init", g_training.init,
                 "safetensors state dict of the whole model to start from (lesson 07's names; "
                 "every stage loads its layers from it)");
    flags
        .option("--checkpoint", g_training.checkpoint,
                "rank 0 writes the whole model's final state dict here, gathered from the stages")
        .check(course::writable(course::OutputPath::kFile));
    flags.flag(
        "--no-shuffle", [] { g_training.shuffle = false; },
        "visit the examples in file order every epoch");
    flags
        .option("--target", g_training.target,
                "test accuracy (0..1) PASS needs within the epochs; lower it for short runs")
        .check(course::number_in(0.0, 1.0))
        .show_default();
    flags.option("--pp", g_training.pp, "pipeline stages (0: every rank one stage)")
        .check(course::count_in(0, 64))
        .show_default();
    flags.option("--micro-batches", g_training.micro_batches, "M: micro-batches per batch")
        .check(course::count_in(1, 4096))
        .show_default();
    flags.option("--schedule", g_training.schedule, "the order of forwards and backwards")
        .check(course::one_of(course::schedule_names()))
        .show_default();
    flags.option("--balance", g_training.balance, "cut the layers by parameters or measured time")
        .check(course::one_of({"params", "time"}))
        .show_default();
    flags
        .option("--receive-timeout", g_training.receive_timeout_s,
                "seconds a stage waits for its neighbour before naming it (0: COURSE_TIMEOUT_S "
                "or 120)")
        .check(course::number_in(0, 86400))
        .show_default();
    flags.option("--bench-steps", g_bench.steps, "--bench: timed steps per row")
        .check(course::count_in(1, 10000))
        .show_default();
    flags.option("--bench-width", g_bench.width, "--bench: hidden width")
        .check(course::count_in(1, 65536))
        .show_default();
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
