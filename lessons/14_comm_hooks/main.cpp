// main.cpp: ./lesson14, sending fewer bytes: lesson 10's DDP with a communication hook
// that compresses every bucket (fp16, bf16, PowerSGD with error feedback).
//
//   make lesson14 && ./lesson14                              # 2 ranks, PowerSGD rank 4
//   ./lesson14 --np 2 --hook fp16
//   ./lesson14 --np 4 --hook powersgd --powersgd-rank 1 --start-iter 100
//   ./lesson14 --bench --np 2 --link 1gbit,50us              # every hook on a slow link
//
// First a self-check of your compression, Gram-Schmidt and PowerSGD step against serial
// oracles (hooks_self_check.h). Then every rank trains lesson 07's MLP on Fashion-MNIST with
// lesson 09's training loop, its gradients synchronised by lesson 10's Reducer through the
// hook. PASS needs the ranks bit-identical at the end and 85% test accuracy within 3
// epochs (--target); the equivalence with one process is printed, and required only when
// the hook is exact (none, allreduce). --bench: PASS when every row left the ranks
// identical.
#include <iostream>
#include <memory>

#include "ddp_bench_flags.h"
#include "ddp_training.h"
#include "ddp_training_flags.h"
#include "driver.h"
#include "driver_prologue.h"
#include "emulated_link.h"
#include "flag_checks.h"
#include "flags.h"
#include "hooked_ddp.h"
#include "hooks_bench.h"
#include "hooks_self_check.h"
#include "process_group_factory.h"
#include "ring_allreduce.h"

namespace {

course::DdpTrainingOptions g_training;
course::HookOptions g_hook;
course::DdpBenchOptions g_bench{.svg_path = ""};

course::Verdict run_rank(course::DriverContext& ctx) {
  // Before anything else: your compression against its serial oracles.
  course::DriverStart start =
      course::start_driver(ctx, {.group = "lesson14",
                                 .install = course::install_lesson05,
                                 .device = g_training.device,
                                 .header = course::link_header(),
                                 .self_check = course::run_lesson14_self_check,
                                 .self_check_passed = course::kLesson14SelfCheckPassed});
  if (start.failed) return *start.failed;
  g_training.local_rank = start.local_rank;
  if (ctx.args().bench) {
    g_bench.csv_path = ctx.bench_csv();
    return course::run_hooks_bench(*start.group, g_bench, std::cout);
  }

  return course::run_ddp_training(
      g_training, *start.group,
      [](course::Module& m, course::ProcessGroup& group) {
        return std::make_unique<course::HookedDdp>(m, group, g_hook);
      },
      std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson14";
  config.title = "DDP communication hooks: fp16/bf16 compression and PowerSGD";
  config.default_np = 2;
  config.backends = course::backend_choices();
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson14_hooks.csv";
  config.has_link = true;
  const auto add_options = [](course::Flags& flags) {
    course::add_ddp_training_flags(flags, g_training);
    course::add_target_flag(flags, g_training);
    flags.option("--hook", g_hook.hook, "none, allreduce, fp16, bf16 or powersgd")
        .check(course::one_of(course::hook_names()))
        .show_default();
    flags.option("--powersgd-rank", g_hook.powersgd_rank, "PowerSGD: matrix_approximation_rank")
        .check(course::count_in(1, 1024))
        .show_default();
    flags
        .option("--start-iter", g_hook.start_iter,
                "PowerSGD: start_powerSGD_iter, plain all-reduce before it")
        .check(course::count_in(0, 1000000))
        .show_default();
    flags
        .option("--min-compression-rate", g_hook.min_compression_rate,
                "PowerSGD: compress a matrix only when n*m >= this * r*(n+m)")
        .check(course::number_in(0, 1e6))
        .show_default();
    flags.flag(
        "--no-warm-start", [] { g_hook.warm_start = false; },
        "PowerSGD: draw every Q afresh each step");
    course::add_ddp_bench_flags(flags, g_bench);
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
