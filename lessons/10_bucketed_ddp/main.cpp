// main.cpp: ./lesson10, DDP the way PyTorch does it: gradient buckets all-reduced while
// backward still runs.
//
//   make lesson10 && ./lesson10                        # 2 ranks, tcp, torch's default buckets
//   ./lesson10 --np 4 --backend gloo --bucket-cap-mb 5
//   ./lesson10 --np 2 --grad-accum 4                   # no_sync checked on real batches
//   ./lesson10 --np 2 --trace trace.json               # + trace.svg; open the JSON in Perfetto
//   ./lesson10 --np 2 --epochs 1 --checkpoint /tmp/mlp.safetensors
//   ./lesson10 --bench --np 2                          # the bucket sweep, CSV and plot
//
// First a self-check of the bucket assignment and the Reducer on cases training cannot see
// (worked tables; gradients arriving in a rank-dependent order: reducer_self_check.h).
// Then every rank loads Fashion-MNIST and trains lesson 07's MLP with lesson 09's training loop
// (ddp_training.h: its flags, sampler, equivalence check and verdict), with gradients
// synchronised by your Reducer through DistributedDataParallel. Then, with
// --trace, a few more steps are recorded and written as Chrome trace JSON and an SVG
// timeline (ddp_trace.h); with --grad-accum K, K micro-batches (K - 1 under no_sync) are
// checked against one step of one process on the K-times batch (no_sync_check.h).
//
// PASS needs lesson 09's three checks (equal to one process on the global batch, ranks
// bit-identical at the end, 85% test accuracy within 3 epochs) and, when asked for, the
// no_sync check. --bench: PASS when every timed configuration left the ranks identical.
#include <iostream>
#include <memory>
#include <sstream>

#include "ddp_bench.h"
#include "ddp_bench_flags.h"
#include "ddp_trace.h"
#include "ddp_training.h"
#include "ddp_training_flags.h"
#include "distributed_data_parallel.h"
#include "driver.h"
#include "driver_prologue.h"
#include "flag_checks.h"
#include "flags.h"
#include "no_sync_check.h"
#include "process_group_factory.h"
#include "reducer_self_check.h"
#include "ring_allreduce.h"

namespace {

struct Options {
  course::DdpTrainingOptions training;
  double bucket_cap_mb = 25;
  double first_bucket_mb = 1;
  bool find_unused = false;
  bool as_view = false;
  int grad_accum = 1;
  int trace_steps = 3;
  std::string trace;
  course::DdpBenchOptions bench;
};
Options g;

course::ReducerOptions reducer_options() {
  return {.first_bucket_bytes = course::mib_to_bytes(g.first_bucket_mb),
          .bucket_cap_bytes = course::mib_to_bytes(g.bucket_cap_mb),
          .find_unused_parameters = g.find_unused,
          .gradient_as_bucket_view = g.as_view};
}

course::Verdict run_rank(course::DriverContext& ctx) {
  // driver_prologue.h's steps one by one: the bench comes before the header and self-check.
  g.training.local_rank = course::select_device(ctx, g.training.device);
  auto pg = course::make_driver_group(ctx, "lesson10", course::install_lesson05);
  if (ctx.args().bench) {
    g.bench.csv_path = ctx.bench_csv();
    return course::run_ddp_bench(*pg, g.bench);
  }
  std::ostringstream buckets;
  buckets << "buckets: first " << g.first_bucket_mb << " MiB, cap " << g.bucket_cap_mb << " MiB"
          << (g.find_unused ? ", find_unused_parameters" : "")
          << (g.as_view ? ", gradient_as_bucket_view" : "");
  course::print_driver_header(ctx, buckets.str());
  // Before training: the cases a default run cannot see (reducer_self_check.h).
  if (auto failed = course::self_check_failure(ctx, course::run_lesson10_self_check(*pg),
                                               course::kLesson10SelfCheckPassed)) {
    return *failed;
  }
  course::Verdict verdict = course::run_ddp_training(
      g.training, *pg,
      [](course::Module& m, course::ProcessGroup& group) {
        return std::make_unique<course::DistributedDataParallel>(m, group, reducer_options());
      },
      std::cout);
  if (g.grad_accum <= 1 && g.trace.empty()) return verdict;
  const course::DdpData data = course::load_ddp_data(g.training);
  if (!g.trace.empty()) {  // a picture even when training failed (ddp_trace.h)
    course::write_ddp_trace(g.training, data, *pg, reducer_options(), g.trace_steps, g.trace,
                            std::cout);
  }
  if (g.grad_accum > 1) {  // no_sync_check.h
    const std::string problem =
        course::check_no_sync(g.training, data, *pg, reducer_options(), g.grad_accum, std::cout);
    if (!problem.empty()) return course::Verdict::fail(problem);
    if (verdict.passed) {
      verdict.detail += ", no_sync over " + std::to_string(g.grad_accum) + " micro-batches exact";
    }
  }
  return verdict;
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson10";
  config.title = "bucketed DDP: gradients all-reduced in buckets while backward runs";
  config.default_np = 2;
  config.backends = course::backend_choices();
  config.has_bench = true;
  config.bench_csv = "bench-results/lesson10_buckets.csv";
  config.has_link = true;
  const auto add_options = [](course::Flags& flags) {
    course::add_ddp_training_flags(flags, g.training);
    course::add_target_flag(flags, g.training);
    flags.option("--bucket-cap-mb", g.bucket_cap_mb, "bucket size limit (0: one per parameter)")
        .check(course::number_in(0, 4096))
        .show_default();
    flags.option("--first-bucket-mb", g.first_bucket_mb, "the first bucket's limit")
        .check(course::number_in(0, 4096))
        .show_default();
    flags.flag("--find-unused", g.find_unused,
               "find_unused_parameters: all-reduce a map of the parameters each rank used");
    flags.flag("--gradient-as-bucket-view", g.as_view, "gradients become views into buckets");
    flags
        .option("--grad-accum", g.grad_accum,
                "after training, check K micro-batches with no_sync against one step")
        .check(course::count_in(1, 64))
        .show_default();
    flags
        .option("--trace", g.trace,
                "after training, record a few steps as Chrome trace JSON (and an SVG beside it)")
        .check(course::writable(course::OutputPath::kFile));
    flags.option("--trace-steps", g.trace_steps, "steps to record with --trace")
        .check(course::count_in(1, 50))
        .show_default();
    course::add_ddp_bench_flags(flags, g.bench);
    flags.option("--svg", g.bench.svg_path, "--bench: plot of step time against bucket cap")
        .check(course::writable(course::OutputPath::kFileInNewDirectory))
        .show_default();
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
