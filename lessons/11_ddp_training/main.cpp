// main.cpp: ./lesson11, the capstone: data-parallel training of a BatchNorm MLP on
// Fashion-MNIST with lesson 10's DDP, SyncBatchNorm, rank-0 checkpoints and exact resume,
// and distributed evaluation.
//
//   make lesson11 && ./lesson11                       # 2 ranks, tcp, 10 epochs
//   ./lesson11 --np 4 --sync-bn --backend gloo
//   ./lesson11 --np 2 --resume                        # continue from the newest checkpoint
//   ./lesson11 --bench --np 2                         # samples/s against one process
//   ./lesson11 --device cuda --backend nccl --np 1     # on a GPU (docs/gpu.md)
//   ./launch --nnodes 2 --node-rank 0 --nproc-per-node 1 --master-addr HOST ./lesson11
//   RANK=0 WORLD_SIZE=2 MASTER_ADDR=HOST MASTER_PORT=29500 ./lesson11   # torchrun's variables
//
// Every rank runs run_capstone (capstone.h) on two process groups over the same ranks: one
// for DDP's gradient buckets and one for SyncBatchNorm's statistics. Only rank 0 prints.
// PASS: 88% test accuracy after the last epoch and bit-identical parameters on every rank.
#include <iostream>

#include "capstone.h"
#include "capstone_bench.h"
#include "capstone_flags.h"
#include "driver.h"
#include "driver_prologue.h"
#include "emulated_link.h"
#include "error.h"
#include "flag_checks.h"
#include "flags.h"
#include "process_group_factory.h"
#include "ring_allreduce.h"
#include "sync_bn_self_check.h"

namespace {

course::CapstoneOptions g_options;
course::CapstoneBenchOptions g_bench;

course::Verdict run_rank(course::DriverContext& ctx) {
  // driver_prologue.h's steps one by one: two groups, the bench before the self-check.
  g_options.train.local_rank = course::select_device(ctx, g_options.train.device);
  auto pg = course::make_driver_group(ctx, "lesson11", course::install_lesson05);
  auto bn_group = course::make_driver_group(ctx, "lesson11-syncbn", course::install_lesson05);
  course::print_driver_header(ctx, course::link_header());
  if (ctx.args().bench) {
    g_bench.csv_path = ctx.bench_csv();
    return course::run_capstone_bench(g_options, g_bench, *pg, *bn_group, std::cout);
  }
  // Before training, with or without --sync-bn: your SyncBatchNorm (sync_bn_self_check.h).
  if (auto failed = course::self_check_failure(ctx, course::self_check_sync_batch_norm(*bn_group),
                                               course::kSyncBnSelfCheckPassed)) {
    return *failed;
  }
  return course::run_capstone(g_options, *pg, *bn_group, std::cout).verdict;
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson11";
  config.title = "the capstone: DDP training with SyncBatchNorm, checkpoints and exact resume";
  config.default_np = 2;
  config.backends = course::backend_choices();
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson11_capstone.csv";
  config.has_link = true;
  return course::run_driver(
      argc, argv, config,
      [](course::Flags& flags) {
        course::add_capstone_flags(flags, g_options);
        flags.option("--bench-steps", g_bench.steps, "timed steps per phase of --bench")
            .check(course::count_in(1, 100000))
            .show_default();
      },
      run_rank);
}
