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
// --grad-accum K, K micro-batches (K - 1 under no_sync) are checked against one step of
// one process on the K-times batch; with --trace, a few more steps are recorded and
// written as Chrome trace JSON and an SVG timeline.
//
// PASS needs lesson 09's three checks (equal to one process on the global batch, ranks
// bit-identical at the end, 85% test accuracy within 3 epochs) and, when asked for, the
// no_sync check. --bench: PASS when every timed configuration left the ranks identical.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "bench_table.h"
#include "ddp_bench.h"
#include "ddp_training.h"
#include "distributed_data_parallel.h"
#include "driver.h"
#include "flag_checks.h"
#include "full_mesh.h"
#include "handshake.h"
#include "ops.h"
#include "process_group_factory.h"
#include "reducer_self_check.h"
#include "ring_allreduce.h"
#include "tensor_ops.h"

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

course::ReducerOptions reducer_options(course::TraceRecorder* trace = nullptr) {
  return {.first_bucket_bytes = course::mib_to_bytes(g.first_bucket_mb),
          .bucket_cap_bytes = course::mib_to_bytes(g.bucket_cap_mb),
          .find_unused_parameters = g.find_unused,
          .gradient_as_bucket_view = g.as_view,
          .trace = trace};
}

// K micro-batches per rank, K - 1 under no_sync, each loss scaled by 1/K, against one step
// of one process on all N * K micro-batches; returns "" or what differed.
std::string check_grad_accum(const course::DdpData& data, course::ProcessGroup& pg) {
  const course::DdpTrainingOptions& o = g.training;
  const int world = pg.size(), rank = pg.rank(), k = g.grad_accum;
  auto model = course::make_ddp_model(o, data.sizes, rank);
  course::DistributedDataParallel ddp(*model, pg, reducer_options());
  auto oracle = course::make_ddp_model(o, data.sizes, 0);
  oracle->load_state_dict(model->state_dict());  // rank 0's, after the broadcast
  auto opt = course::make_ddp_optimizer(o, model->parameters());
  auto oracle_opt = course::make_ddp_optimizer(o, oracle->parameters());
  // Rank r's K * B examples are rows [r K B, (r + 1) K B) of the global batch.
  const int64_t b = o.batch_size;
  const course::Batch all =
      course::global_batch(data.train, world, k * b, o.shuffle, o.seed, /*epoch=*/0, /*step=*/0);
  if (all.inputs.size(0) != world * k * b) {
    return "--grad-accum " + std::to_string(k) + ": the training set has fewer than " +
           std::to_string(world * k * b) + " examples for one accumulated step";
  }
  opt->zero_grad();
  for (int m = 0; m < k; ++m) {
    const int64_t first = (static_cast<int64_t>(rank) * k + m) * b;
    const course::Variable x(all.inputs.rows(first, b));
    const auto micro = [&] {
      course::scale(course::cross_entropy(ddp.forward(x), all.targets.rows(first, b)), 1.0f / k)
          .backward();
    };
    if (m + 1 < k) {
      auto no_sync = ddp.no_sync();
      micro();
    } else {
      micro();
    }
  }
  opt->step();
  oracle_opt->zero_grad();
  course::cross_entropy(oracle->forward(course::Variable(all.inputs)), all.targets).backward();
  oracle_opt->step();
  const double diff = course::max_abs_difference(model->state_dict(), oracle->state_dict());
  if (rank == 0) {
    std::cout << "no_sync: " << k << " micro-batches of " << b << " per rank (" << k - 1
              << " under no_sync) vs one process on " << world * k * b
              << " examples: max |difference| " << course::format_fixed(diff, 9) << std::endl;
  }
  if (diff > course::equivalence_tolerance(o)) {
    return "no_sync: gradient accumulation over " + std::to_string(k) +
           " micro-batches differs from one step on the whole batch by " +
           course::format_fixed(diff, 9);
  }
  return "";
}

// A few traced steps on this rank's real batches, gathered to rank 0 through the store.
void write_trace(course::DriverContext& ctx, const course::DdpData& data,
                 course::ProcessGroup& pg) {
  const course::DdpTrainingOptions& o = g.training;
  course::TraceRecorder trace(ctx.rank());
  auto model = course::make_ddp_model(o, data.sizes, ctx.rank());
  course::DistributedDataParallel ddp(*model, pg, reducer_options(&trace));
  auto opt = course::make_ddp_optimizer(o, model->parameters());
  for (int step = 0; step <= g.trace_steps; ++step) {
    if (step == 1) trace.clear();  // the first step builds the buckets that step 2 rebuilds
    const course::Batch all =
        course::global_batch(data.train, ctx.world(), o.batch_size, o.shuffle, o.seed, 0, step);
    const course::Variable x(all.inputs.rows(ctx.rank() * o.batch_size, o.batch_size));
    const course::Tensor y = all.targets.rows(ctx.rank() * o.batch_size, o.batch_size);
    opt->zero_grad();
    course::Variable loss = course::cross_entropy(ddp.forward(x), y);
    trace.begin_backward();
    loss.backward();
    const double t0 = course::TraceRecorder::now_us();
    opt->step();
    trace.span(course::TraceRecorder::kCompute, "optimizer", t0, course::TraceRecorder::now_us());
  }
  ctx.store().set("lesson10/trace/" + std::to_string(ctx.rank()), trace.serialize());
  pg.barrier();
  if (ctx.rank() != 0) return;
  std::vector<std::vector<course::TraceSpan>> ranks;
  for (int r = 0; r < ctx.world(); ++r) {
    ranks.push_back(course::parse_spans(ctx.store().get("lesson10/trace/" + std::to_string(r))));
  }
  course::write_chrome_trace(g.trace, ranks);
  const std::string svg = (g.trace.size() > 5 && g.trace.substr(g.trace.size() - 5) == ".json"
                               ? g.trace.substr(0, g.trace.size() - 5)
                               : g.trace) +
                          ".svg";
  course::write_timeline_svg(svg, ranks,
                             "lesson 10: " + std::to_string(g.trace_steps) + " steps on " +
                                 std::to_string(ctx.world()) + " ranks, " + ddp.describe());
  std::cout << "trace: " << g.trace_steps << " steps written to " << g.trace
            << " (open it in https://ui.perfetto.dev) and " << svg << std::endl;
}

course::Verdict run_rank(course::DriverContext& ctx) {
  course::GroupRecipe recipe;
  recipe.name = "lesson10";
  recipe.host = ctx.advertise_host();
  recipe.token = course::job_token();
  recipe.connect_mesh = course::connect_full_mesh;
  recipe.install = course::install_lesson05;
  recipe.device = ctx.env().local_rank;  // nccl: this rank's GPU
  course::check_backend_device(ctx.args().backend, g.training.device);
  g.training.local_rank = ctx.env().local_rank;
  auto pg =
      course::make_process_group(ctx.args().backend, ctx.store(), ctx.rank(), ctx.world(), recipe);
  if (ctx.args().bench) return course::run_ddp_bench(*pg, g.bench);
  if (ctx.rank() == 0) {
    std::cout << "backend " << ctx.args().backend << ", " << ctx.world()
              << " rank(s), buckets: first " << g.first_bucket_mb << " MiB, cap " << g.bucket_cap_mb
              << " MiB" << (g.find_unused ? ", find_unused_parameters" : "")
              << (g.as_view ? ", gradient_as_bucket_view" : "") << std::endl;
  }
  // Before training: the cases a default run cannot see (reducer_self_check.h).
  const std::string problem = course::run_lesson10_self_check(*pg);
  if (!problem.empty()) return course::Verdict::fail("self-check: " + problem);
  if (ctx.rank() == 0) std::cout << course::kLesson10SelfCheckPassed << std::endl;
  course::Verdict verdict = course::run_ddp_training(
      g.training, *pg,
      [](course::Module& m, course::ProcessGroup& group) {
        return std::make_unique<course::DistributedDataParallel>(m, group, reducer_options());
      },
      std::cout);
  if (g.grad_accum <= 1 && g.trace.empty()) return verdict;
  const course::DdpData data = course::load_ddp_data(g.training);
  if (!g.trace.empty()) write_trace(ctx, data, *pg);  // a picture even when training failed
  if (g.grad_accum > 1) {
    const std::string problem = check_grad_accum(data, *pg);
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
  config.has_link = true;
  const auto add_options = [](CLI::App& app) {
    course::add_ddp_training_flags(app, g.training);
    course::add_target_flag(app, g.training);
    app.add_option("--bucket-cap-mb", g.bucket_cap_mb, "bucket size limit (0: one per parameter)")
        ->check(course::number_in(0, 4096))
        ->capture_default_str();
    app.add_option("--first-bucket-mb", g.first_bucket_mb, "the first bucket's limit")
        ->check(course::number_in(0, 4096))
        ->capture_default_str();
    app.add_flag("--find-unused", g.find_unused,
                 "find_unused_parameters: all-reduce a map of the parameters each rank used");
    app.add_flag("--gradient-as-bucket-view", g.as_view, "gradients become views into buckets");
    app.add_option("--grad-accum", g.grad_accum,
                   "after training, check K micro-batches with no_sync against one step")
        ->check(course::count_in(1, 64))
        ->capture_default_str();
    app.add_option(
        "--trace", g.trace,
        "after training, record a few steps as Chrome trace JSON (and an SVG beside it)");
    app.add_option("--trace-steps", g.trace_steps, "steps to record with --trace")
        ->check(course::count_in(1, 50))
        ->capture_default_str();
    app.add_option("--bench-batch", g.bench.batch_size, "--bench: examples per rank per step")
        ->check(course::count_in(1, 60000))
        ->capture_default_str();
    app.add_option("--bench-steps", g.bench.steps, "--bench: timed steps per row")
        ->check(course::count_in(1, 100000))
        ->capture_default_str();
    app.add_option("--csv", g.bench.csv_path, "--bench: CSV file")->capture_default_str();
    app.add_option("--svg", g.bench.svg_path, "--bench: plot of step time against bucket cap")
        ->capture_default_str();
  };
  return course::run_driver(argc, argv, config, add_options, run_rank);
}
