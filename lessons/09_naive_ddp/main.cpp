// main.cpp: ./lesson09, DDP across processes the simple way, and DataParallel versus DDP.
//
//   make lesson09 && ./lesson09                       # 2 ranks, tcp, per-param, 3 epochs
//   ./lesson09 --np 4 --backend gloo --variant flat
//   ./lesson09 --np 2 --epochs 1 --checkpoint /tmp/mlp.safetensors
//   ./lesson09 --np 2 --init /tmp/mlp.safetensors     # start again from it
//   ./lesson09 --compare                              # the side-by-side table
//
// First a self-check of the sampler and of NaiveDdp on cases training cannot see (uneven
// data, ranks seeded differently, gradients with a closed-form mean: ddp_self_check.h).
// Then every rank loads Fashion-MNIST, builds lesson 07's MLP from its own seed, wraps it in
// your NaiveDdp (which checks the model on every rank and broadcasts rank 0's
// parameters), and trains on its DistributedSampler's share with batch --batch-size per
// rank. Only rank 0 prints. The training loop and the verdict are ddp_training.h's:
// PASS needs (1) three DDP steps equal to three steps of one process with the global
// batch, (2) bit-identical parameters on every rank at the end, and (3) lesson 07's 85%
// test accuracy within 3 epochs.
#include <iostream>

#include "ddp_compare.h"
#include "ddp_self_check.h"
#include "ddp_training.h"
#include "ddp_training_flags.h"
#include "driver.h"
#include "driver_prologue.h"
#include "driver_recipe.h"
#include "flag_checks.h"
#include "flags.h"
#include "naive_ddp.h"
#include "process_group_factory.h"
#include "ring_allreduce.h"

namespace {

course::DdpTrainingOptions g_options;
std::string g_variant = "per-param";
bool g_compare = false;
course::DdpCompareOptions g_compare_options;

course::Verdict run_rank(course::DriverContext& ctx) {
  if (g_compare) {
    g_compare_options.data = g_options.data;
    g_compare_options.hidden = g_options.hidden;
    return course::run_ddp_compare(ctx, g_compare_options,
                                   course::driver_recipe(ctx, "lesson09", course::install_lesson05),
                                   std::cout);
  }
  const course::GradSync variant = course::parse_grad_sync(g_variant);
  // Before training: the cases a default run cannot see (ddp_self_check.h).
  course::DriverStart start =
      course::start_driver(ctx, {.group = "lesson09",
                                 .install = course::install_lesson05,
                                 .device = g_options.device,
                                 .header = "variant " + g_variant,
                                 .self_check = course::run_lesson09_self_check,
                                 .self_check_passed = course::kLesson09SelfCheckPassed});
  if (start.failed) return *start.failed;
  g_options.local_rank = start.local_rank;
  return course::run_ddp_training(
      g_options, *start.group,
      [variant](course::Module& m, course::ProcessGroup& g) {
        return std::make_unique<course::NaiveDdp>(m, g, variant);
      },
      std::cout);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson09";
  config.title = "naive DDP: a distributed sampler, one model per rank, every gradient averaged";
  config.default_np = 2;
  config.backends = course::backend_choices();
  config.has_link = true;
  const auto add_options = [](course::Flags& flags) {
    course::add_ddp_training_flags(flags, g_options);
    course::add_target_flag(flags, g_options);
    flags.option("--variant", g_variant, "per-param (one all-reduce each) or flat (one buffer)")
        .check(course::one_of({"per-param", "flat"}))
        .show_default();
    flags.flag("--compare", g_compare,
               "one process vs DataParallel (lesson 08) vs naive DDP on every backend");
    flags
        .option("--global-batch", g_compare_options.global_batch,
                "--compare: examples per step over all ranks (divisible by --np)")
        .check(course::count_in(1, 60000))
        .show_default();
    flags.option("--steps", g_compare_options.steps, "--compare: timed steps per row")
        .check(course::count_in(1, 100000))
        .show_default();
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
