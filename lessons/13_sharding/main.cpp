// main.cpp: ./lesson13, sharding the model's state: ZeRO-1, ZeRO-2 and FSDP (ZeRO-3) on
// flat parameter units, with a per-rank memory budget.
//
//   make lesson13 && ./lesson13                                  # 4 ranks, FSDP
//   ./lesson13 --np 2 --stage 1 --optimizer adam
//   ./lesson13 --np 4 --stage 3 --hidden 1024 1024 1024 --memory-budget 12
//   ./lesson13 --bench --np 2                                    # DDP and stages 1-3
//
// First a self-check of your ring halves and of the three stages against lesson 10's DDP
// (sharding_self_check.h). Then every rank trains lesson 07's MLP on Fashion-MNIST with lesson
// 09's loop, the optimizer stepping this rank's shards only. PASS needs the ranks'
// parameters identical, the first steps equal to DDP's within tolerance, and 85% test
// accuracy within 3 epochs (--target); with --memory-budget, the model state of every rank
// must stay within it the whole run. --bench: PASS when every row left the ranks identical.
#include <iostream>

#include "ddp_bench_flags.h"
#include "ddp_training_flags.h"
#include "driver.h"
#include "driver_prologue.h"
#include "emulated_link.h"
#include "flag_checks.h"
#include "flags.h"
#include "process_group_factory.h"
#include "sharding.h"
#include "sharding_bench.h"
#include "sharding_self_check.h"
#include "sharding_training.h"

namespace {

course::ShardedTrainingOptions g_training;
course::DdpBenchOptions g_bench{.svg_path = ""};

course::Verdict run_rank(course::DriverContext& ctx) {
  // Before anything else: your ring halves and stages against their oracles.
  course::DriverStart start =
      course::start_driver(ctx, {.group = "lesson13",
                                 .install = course::install_lesson13,
                                 .device = g_training.device,
                                 .header = course::link_header(),
                                 .self_check = course::run_lesson13_self_check,
                                 .self_check_passed = course::kLesson13SelfCheckPassed});
  if (start.failed) return *start.failed;
  g_training.local_rank = start.local_rank;
  if (ctx.args().bench) {
    g_bench.csv_path = ctx.bench_csv();
    return course::run_sharding_bench(*start.group, g_bench, std::cout);
  }
  return course::run_sharded_training(g_training, *start.group, std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson13";
  config.title = "sharding the model's state: ZeRO-1, ZeRO-2 and FSDP";
  config.default_np = 4;
  config.backends = course::backend_choices();
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson13_sharding.csv";
  config.has_link = true;
  const auto add_options = [](course::Flags& flags) {
    course::add_ddp_training_flags(flags, g_training);
    course::add_target_flag(flags, g_training);
    flags
        .option("--stage", g_training.sharding.stage,
                "1: optimizer state sharded, 2: + gradients, 3: + parameters (FSDP)")
        .check(course::count_in(1, 3))
        .show_default();
    flags
        .option("--min-unit-params", g_training.sharding.min_unit_params,
                "wrap policy: layers per unit until it holds this many parameters (0: one "
                "layer per unit)")
        .check(course::count_in(0, int64_t{1} << 40))
        .show_default();
    flags.flag(
        "--no-prefetch", [] { g_training.sharding.prefetch = false; },
        "stage 3: gather each unit only when it is needed");
    flags
        .option("--memory-budget", g_training.memory_budget_mib,
                "MiB of model state each rank may hold (0: no limit)")
        .check(course::number_in(0, 1e9))
        .show_default();
    course::add_ddp_bench_flags(flags, g_bench);
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
