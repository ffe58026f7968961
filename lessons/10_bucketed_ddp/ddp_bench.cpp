// ddp_bench.cpp: lesson 10's benchmark (see the header). Given code.
#include "ddp_bench.h"

#include <cblas.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>

#include "bench_stats.h"
#include "bench_table.h"
#include "clock.h"
#include "ddp_bench_flags.h"
#include "distributed_data_parallel.h"
#include "emulated_link.h"
#include "error.h"
#include "naive_ddp.h"
#include "ops.h"
#include "optimizer.h"
#include "overhead_model.h"
#include "rng.h"
#include "sequential.h"
#include "svg_canvas.h"
#include "synthetic_batch.h"
#include "tensor_ops.h"

namespace course {

namespace {

using Clock = std::chrono::steady_clock;

// Context switches of this process so far, every thread, voluntary or not (getrusage).
double context_switches() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_nvcsw + usage.ru_nivcsw);
}

// CPU time of this process so far, every thread, user and system, in seconds (getrusage).
double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Largest |parameter difference| between this rank and rank 0, on every rank.
float divergence(Module& model, ProcessGroup& group) {
  float worst = 0;
  for (const Variable& p : model.parameters()) {
    Tensor mine = p.data().clone();
    Tensor root = p.data().clone();
    group.broadcast(root.span(), 0);
    worst = std::max(worst, max_abs_diff(mine, root));
  }
  group.all_reduce(std::span<float>(&worst, 1), ReduceOp::MAX);
  return worst;
}

struct Setup {
  std::shared_ptr<Sequential> model;
  std::unique_ptr<Sgd> optimizer;
  std::pair<Tensor, Tensor> batch;
};

Setup make_setup(const DdpBenchOptions& o, int rank) {
  const std::vector<int64_t> sizes = ddp_bench_sizes(o);
  Rng rng(1);
  Setup s;
  s.model = make_mlp(sizes, rng);
  s.optimizer = std::make_unique<Sgd>(s.model->parameters(), SgdOptions{.lr = 1e-3f});
  s.batch = synthetic_batch(o.batch_size, 784, 10, rank);
  return s;
}

// The step time against the bucket cap, log-scaled x, with the baselines as lines.
void write_plot(const std::string& path, const std::string& model,
                const std::vector<std::pair<double, double>>& points, double compute_ms,
                double per_param_ms, double flat_ms) {
  const double w = 720, h = 420, left = 70, right = 170, top = 40, bottom = 60;
  double ymax = std::max({compute_ms, per_param_ms, flat_ms});
  for (const auto& p : points) ymax = std::max(ymax, p.second);
  ymax *= 1.1;
  const double xmin = std::log10(points.front().first), xmax = std::log10(points.back().first);
  const auto X = [&](double mib) {
    return left + (std::log10(mib) - xmin) / std::max(xmax - xmin, 1e-9) * (w - left - right);
  };
  const auto Y = [&](double ms) { return top + (1 - ms / ymax) * (h - top - bottom); };
  SvgCanvas svg(w, h);
  svg.text(left, 24, "lesson 10: step time against bucket cap (" + model + ")", {.size = 14});
  svg.line(left, Y(0), w - right, Y(0), "black");
  svg.line(left, top, left, Y(0), "black");
  for (int k = 0; k <= 4; ++k) {
    const double ms = ymax * k / 4;
    svg.text(left - 6, Y(ms) + 4, format_fixed(ms, 2), {.anchor = "end"});
  }
  const double mid = top + (h - top - bottom) / 2;
  svg.text(16, mid, "ms per step", {.anchor = "middle", .rotate_degrees = -90});
  for (const auto& p : points) {
    const std::string label = p.first < 0.1    ? "per-param"
                              : p.first > 1000 ? "one"
                                               : format_fixed(p.first, 2);
    svg.text(X(p.first), Y(0) + 16, label, {.anchor = "middle"});
  }
  svg.text((left + w - right) / 2, h - 16, "bucket cap (MiB, log scale)", {.anchor = "middle"});
  const auto hline = [&](double ms, const std::string& colour, const std::string& label) {
    svg.line(left, Y(ms), w - right, Y(ms), colour, "5,4");
    svg.text(w - right + 6, Y(ms) + 4, label, {.fill = colour});
  };
  hline(compute_ms, "#59a14f", "compute only");
  hline(per_param_ms, "#e15759", "naive per-param");
  hline(flat_ms, "#f28e2b", "naive flat");
  std::vector<std::pair<double, double>> line;
  for (const auto& p : points) line.emplace_back(X(p.first), Y(p.second));
  svg.polyline(line, "#4e79a7");
  for (const auto& [x, y] : line) svg.circle(x, y, 4, "#4e79a7");
  svg.text(w - right + 6, Y(points.back().second) - 10, "bucketed", {.fill = "#4e79a7"});
  svg.write(path);
}

}  // namespace

Verdict run_ddp_bench(ProcessGroup& group, const DdpBenchOptions& o) {
  openblas_set_num_threads(1);  // one core per rank
  const int rank = group.rank(), world = group.size();
  std::ostream* out = rank == 0 ? &std::cout : nullptr;

  // One contender per row, each with its own model, all alive at once, so that the
  // timed steps can be interleaved: round r times step r of every contender in turn.
  // On a shared machine the load drifts; interleaving spreads the drift over every row
  // alike instead of favouring whichever row ran in a quiet minute.
  struct Contender {
    std::string name, buckets;
    Setup setup;
    std::unique_ptr<DistributedDataParallel> ddp;
    std::unique_ptr<NaiveDdp> naive;
    std::function<void(Contender&)> step;
    int micro_batches = 1;
    double cap_mib = -1;  // for the plot; < 0: not a point of the sweep
    std::vector<double> times;
    double median = 0;
    // Where the time went (rank 0's own, per step): the Reducer's parts, context switches.
    std::vector<double> hooks, wait, copy_back, switches, cpu;
  };
  std::vector<Contender> rows;
  const auto loss_backward = [](Contender& c, Module& m) {
    cross_entropy(m.forward(Variable(c.setup.batch.first)), c.setup.batch.second).backward();
  };
  const auto add = [&](std::string name, std::string buckets,
                       std::function<void(Contender&)> step) -> Contender& {
    Contender& c = rows.emplace_back();
    c.name = std::move(name);
    c.buckets = std::move(buckets);
    c.setup = make_setup(o, rank);
    c.step = std::move(step);
    return c;
  };
  rows.reserve(20);

  // Compute only: every rank trains alone, so the machine is as loaded as in the others.
  add("compute only", "-", [&](Contender& c) {
    c.setup.optimizer->zero_grad();
    loss_backward(c, *c.setup.model);
    c.setup.optimizer->step();
  });
  // The communication to hide: one all_reduce of every gradient, alone.
  Tensor flat = Tensor::zeros({rows[0].setup.model->parameter_count()});
  add("all_reduce alone", "1", [&](Contender&) { group.all_reduce(flat.span(), ReduceOp::SUM); });
  // The fixed cost of one all_reduce (the model's o): one of a single float.
  float one_float = 0;
  add("all_reduce 4 B", "1",
      [&](Contender&) { group.all_reduce(std::span<float>(&one_float, 1), ReduceOp::SUM); });
  // Lesson 09's NaiveDdp: every gradient after backward, per parameter or in one buffer.
  for (GradSync variant : {GradSync::per_param, GradSync::flat}) {
    Contender& c = add("naive " + grad_sync_name(variant), "", [&](Contender& c) {
      c.setup.optimizer->zero_grad();
      loss_backward(c, c.naive->module());
      c.naive->sync_gradients();
      c.setup.optimizer->step();
    });
    c.naive = std::make_unique<NaiveDdp>(*c.setup.model, group, variant);
    c.buckets =
        variant == GradSync::flat ? "1" : std::to_string(c.setup.model->parameters().size());
  }
  // The Reducer at each cap (the first bucket the same), then torch's defaults.
  const double kOne = 1e6;  // MiB: "one bucket"
  const auto loss_backward_ddp = [](Contender& c) {
    cross_entropy(c.ddp->forward(Variable(c.setup.batch.first)), c.setup.batch.second).backward();
  };
  const auto ddp_step = [&](Contender& c) {
    c.setup.optimizer->zero_grad();
    {
      auto guard = c.ddp->no_sync();
      for (int i = 0; i < c.micro_batches - 1; ++i) loss_backward_ddp(c);
    }
    loss_backward_ddp(c);
    c.setup.optimizer->step();
  };
  const std::vector<std::pair<std::string, std::pair<double, double>>> configs = {
      {"bucketed per-param", {0, 0}}, {"bucketed 0.25 MiB", {0.25, 0.25}},
      {"bucketed 1 MiB", {1, 1}},     {"bucketed 5 MiB", {5, 5}},
      {"bucketed 25 MiB", {25, 25}},  {"bucketed one", {kOne, kOne}},
      {"bucketed default", {1, 25}},  {"bucketed view", {1, 25}}};
  for (const auto& [name, caps] : configs) {
    Contender& c = add(name, "", ddp_step);
    c.ddp = std::make_unique<DistributedDataParallel>(
        *c.setup.model, group,
        ReducerOptions{.first_bucket_bytes = mib_to_bytes(caps.first),
                       .bucket_cap_bytes = mib_to_bytes(caps.second),
                       .gradient_as_bucket_view = name == "bucketed view"});
    c.buckets = std::to_string(c.ddp->reducer().buckets().size());
    if (name != "bucketed default" && name != "bucketed view") {
      c.cap_mib = caps.second == 0 ? 0.05 : caps.second == kOne ? 2000 : caps.second;
    }
  }
  // Gradient accumulation: K - 1 micro-batches under no_sync, then one synchronised.
  for (int k : {2, 4, 8}) {
    Contender& c = add("no_sync K=" + std::to_string(k), "", ddp_step);
    c.ddp = std::make_unique<DistributedDataParallel>(*c.setup.model, group);
    c.buckets = std::to_string(c.ddp->reducer().buckets().size());
    c.micro_batches = k;
  }

  const int64_t grad_bytes = rows[0].setup.model->parameter_count() * 4;
  const int model_params = static_cast<int>(rows[0].setup.model->parameters().size());
  if (out) {
    *out << "# lesson 10 --bench: MLP 784 -> " << o.hidden << " x " << o.layers << " -> 10, "
         << rows[0].setup.model->parameter_count() << " parameters (" << format_bytes(grad_bytes)
         << " of gradients), batch " << o.batch_size << " per rank, " << world << " rank(s), "
         << group.backend() << ", " << o.steps << " interleaved rounds, median per row of the "
         << "slowest rank; no_sync rows: time per micro-batch\n# " << link_header() << std::endl;
  }
  for (int round = 0; round < o.warmup + o.steps; ++round) {
    for (Contender& c : rows) {
      group.barrier();  // every rank starts the step together (compute only has no collective)
      const double switches0 = context_switches(), cpu0 = cpu_seconds();
      const auto t0 = Clock::now();
      c.step(c);
      if (round >= o.warmup) {
        c.times.push_back(seconds_since(t0) / c.micro_batches);
        c.switches.push_back(context_switches() - switches0);
        c.cpu.push_back((cpu_seconds() - cpu0) / c.micro_batches);
        if (c.ddp) {
          const ReducerStepTimes& parts = c.ddp->reducer().last_step_times();
          c.hooks.push_back(parts.hooks);
          c.wait.push_back(parts.wait);
          c.copy_back.push_back(parts.copy_back);
        }
      }
    }
  }
  for (Contender& c : rows) c.median = slowest_median(c.times, group);

  const double compute = rows[0].median, comm = rows[1].median;
  const auto hidden_share = [&](double t) {
    return std::clamp(1.0 - (t - compute) / comm, 0.0, 1.0);
  };
  const OverheadModel model = fit_overhead_model(compute, rows[2].median, comm, grad_bytes);
  if (out) *out << "# " << model.describe() << std::endl;
  BenchTable table({{"mode", 20},
                    {"buckets", 8},
                    {"step(ms)", 9},
                    {"x compute", 10},
                    {"hidden", 7},
                    {"model(ms)", 10}});
  if (out) table.print_header(*out);
  std::vector<std::pair<double, double>> points;
  double per_param = 0, flat_time = 0, bucketed_default = 0;
  float worst = 0;
  for (Contender& c : rows) {
    const bool is_comm = c.name.rfind("all_reduce", 0) == 0;
    const bool has_comm = c.name != "compute only" && !is_comm && c.micro_batches == 1;
    double predicted = compute;  // compute only
    if (is_comm) predicted = c.name == "all_reduce alone" ? model.all_reduce(grad_bytes) : model.o;
    if (c.naive)
      predicted = model.naive_step(c.naive->variant() == GradSync::flat ? 1 : model_params);
    if (c.ddp) {
      const std::vector<BucketInfo> buckets = c.ddp->reducer().buckets();
      c.buckets = std::to_string(buckets.size());
      predicted = model.bucketed_step(static_cast<int>(buckets.size()), buckets.back().bytes,
                                      c.micro_batches);
    }
    table.add_row({c.name, c.buckets, format_fixed(1e3 * c.median, 1),
                   is_comm ? "-" : format_fixed(c.median / compute, 2),
                   has_comm ? format_fixed(100 * hidden_share(c.median), 0) + "%" : "-",
                   format_fixed(1e3 * predicted, 1)},
                  out);
    if (c.cap_mib > 0) points.emplace_back(c.cap_mib, 1e3 * c.median);
    if (c.name == "naive per-param") per_param = c.median;
    if (c.name == "naive flat") flat_time = c.median;
    if (c.name == "bucketed default") bucketed_default = c.median;
    if (c.ddp) worst = std::max(worst, divergence(*c.setup.model, group));
  }
  const std::string summary =
      "bucketed default " + format_fixed(bucketed_default / compute, 2) + "x compute only, " +
      format_fixed(per_param / bucketed_default, 2) + "x faster than naive per-param, " +
      format_fixed(100 * hidden_share(bucketed_default), 0) + "% of the all-reduce hidden";
  table.add_note(summary, out);
  if (out) {
    // The Reducer's side of the step, as the thread running backward sees it.
    *out << "# where a synchronised step's time goes, rank 0, medians: hooks = time in the "
            "hooks (gradients into buckets, launches), wait = the wait after backward for the "
            "all-reduces still in flight, copy back = means into the gradients; csw = context "
            "switches per step (getrusage, all threads)\n";
    BenchTable parts({{"mode", 20},
                      {"step(ms)", 9},
                      {"hooks(ms)", 10},
                      {"wait(ms)", 9},
                      {"copy back(ms)", 14},
                      {"cpu(ms)", 8},
                      {"csw", 6}});
    parts.print_header(*out);
    for (Contender& c : rows) {
      if (c.name == "all_reduce 4 B" || c.micro_batches != 1) continue;
      const auto ms = [&](const std::vector<double>& v) {
        return c.ddp ? format_fixed(1e3 * median(v), 1) : std::string("-");
      };
      parts.add_row(
          {c.name, format_fixed(1e3 * median(c.times), 1), ms(c.hooks), ms(c.wait), ms(c.copy_back),
           format_fixed(1e3 * median(c.cpu), 1), format_fixed(median(c.switches), 0)},
          out);
    }
  }
  if (rank == 0) {
    table.write_csv(o.csv_path);
    if (!o.svg_path.empty()) {
      write_plot(o.svg_path,
                 std::to_string(o.hidden) + " x " + std::to_string(o.layers) + " MLP, " +
                     link_from_env().describe(),
                 points, 1e3 * compute, 1e3 * per_param, 1e3 * flat_time);
    }
    std::cout << "wrote " << o.csv_path << (o.svg_path.empty() ? "" : " and " + o.svg_path) << "\n";
  }
  if (worst != 0) {
    return Verdict::fail("after the bucketed runs the ranks' parameters differ by up to " +
                         format_fixed(worst, 8));
  }
  return Verdict::pass(summary + " (ranks bit-identical after every run)");
}

}  // namespace course
