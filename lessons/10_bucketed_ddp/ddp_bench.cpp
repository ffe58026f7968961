// ddp_bench.cpp: lesson 10's benchmark (see the header). Given code.
#include "ddp_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "bench_table.h"
#include "distributed_data_parallel.h"
#include "error.h"
#include "naive_ddp.h"
#include "ops.h"
#include "optimizer.h"
#include "rng.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Synthetic inputs: index-dependent, different on every rank.
std::pair<Tensor, Tensor> bench_batch(int64_t rows, int rank) {
  Tensor x = Tensor::empty({rows, 784});
  Tensor y = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i) {
    y.data()[i] = static_cast<float>((i + rank) % 10);
    for (int64_t j = 0; j < 784; ++j) {
      x.data()[i * 784 + j] = static_cast<float>(std::sin(0.01 * (j + 1) * (i + 3 + 7 * rank)));
    }
  }
  return {x, y};
}

// The slowest rank's median: a step is as slow as its slowest rank.
double slowest_median(std::vector<double> times, ProcessGroup& group) {
  std::sort(times.begin(), times.end());
  float median = static_cast<float>(times[times.size() / 2]);
  group.all_reduce(std::span<float>(&median, 1), ReduceOp::MAX);
  return median;
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
  std::vector<int64_t> sizes{784};
  for (int l = 0; l < o.layers; ++l) sizes.push_back(o.hidden);
  sizes.push_back(10);
  Rng rng(1);
  Setup s;
  s.model = make_mlp(sizes, rng);
  s.optimizer = std::make_unique<Sgd>(s.model->parameters(), SgdOptions{.lr = 1e-3f});
  s.batch = bench_batch(o.batch_size, rank);
  return s;
}

// Times o.steps steps of `step` after o.warmup untimed ones; returns the per-step times.
std::vector<double> time_steps(const DdpBenchOptions& o, ProcessGroup& group,
                               const std::function<void()>& step) {
  for (int i = 0; i < o.warmup; ++i) step();
  group.barrier();
  std::vector<double> times;
  for (int i = 0; i < o.steps; ++i) {
    const auto t0 = Clock::now();
    step();
    times.push_back(seconds_since(t0));
  }
  return times;
}

// The step time against the bucket cap, log-scaled x, with the baselines as lines.
void write_plot(const std::string& path, const std::vector<std::pair<double, double>>& points,
                double compute_ms, double per_param_ms, double flat_ms) {
  const double w = 720, h = 420, left = 70, right = 170, top = 40, bottom = 60;
  double ymax = std::max({compute_ms, per_param_ms, flat_ms});
  for (const auto& p : points) ymax = std::max(ymax, p.second);
  ymax *= 1.1;
  const double xmin = std::log10(points.front().first), xmax = std::log10(points.back().first);
  const auto X = [&](double mib) {
    return left + (std::log10(mib) - xmin) / std::max(xmax - xmin, 1e-9) * (w - left - right);
  };
  const auto Y = [&](double ms) { return top + (1 - ms / ymax) * (h - top - bottom); };
  std::ostringstream svg;
  svg.precision(2);
  svg << std::fixed << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\""
      << h << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left << "\" y=\"24\" font-size=\"14\">lesson 10: step time against "
      << "bucket cap (2048 x 4 MLP)</text>\n"
      << "<line x1=\"" << left << "\" y1=\"" << Y(0) << "\" x2=\"" << w - right << "\" y2=\""
      << Y(0) << "\" stroke=\"black\"/>\n<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\""
      << left << "\" y2=\"" << Y(0) << "\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double ms = ymax * k / 4;
    svg << "<text x=\"" << left - 6 << "\" y=\"" << Y(ms) + 4 << "\" text-anchor=\"end\">" << ms
        << "</text>\n";
  }
  svg << "<text x=\"16\" y=\"" << top + (h - top - bottom) / 2 << "\" transform=\"rotate(-90 16 "
      << top + (h - top - bottom) / 2 << ")\" text-anchor=\"middle\">ms per step</text>\n";
  for (const auto& p : points) {
    svg << "<text x=\"" << X(p.first) << "\" y=\"" << Y(0) + 16 << "\" text-anchor=\"middle\">"
        << (p.first < 0.1    ? "per-param"
            : p.first > 1000 ? "one"
                             : format_fixed(p.first, 2))
        << "</text>\n";
  }
  svg << "<text x=\"" << (left + w - right) / 2 << "\" y=\"" << h - 16
      << "\" text-anchor=\"middle\">bucket cap (MiB, log scale)</text>\n";
  const auto hline = [&](double ms, const char* colour, const std::string& label) {
    svg << "<line x1=\"" << left << "\" y1=\"" << Y(ms) << "\" x2=\"" << w - right << "\" y2=\""
        << Y(ms) << "\" stroke=\"" << colour << "\" stroke-dasharray=\"5,4\"/>\n<text x=\""
        << w - right + 6 << "\" y=\"" << Y(ms) + 4 << "\" fill=\"" << colour << "\">" << label
        << "</text>\n";
  };
  hline(compute_ms, "#59a14f", "compute only");
  hline(per_param_ms, "#e15759", "naive per-param");
  hline(flat_ms, "#f28e2b", "naive flat");
  svg << "<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\" points=\"";
  for (const auto& p : points) svg << X(p.first) << "," << Y(p.second) << " ";
  svg << "\"/>\n";
  for (const auto& p : points) {
    svg << "<circle cx=\"" << X(p.first) << "\" cy=\"" << Y(p.second)
        << "\" r=\"4\" fill=\"#4e79a7\"/>\n";
  }
  svg << "<text x=\"" << w - right + 6 << "\" y=\"" << Y(points.back().second) - 10
      << "\" fill=\"#4e79a7\">bucketed</text>\n</svg>\n";
  std::ofstream out(path);
  out << svg.str();
  if (!out) throw SystemError("cannot write " + path);
}

}  // namespace

Verdict run_ddp_bench(ProcessGroup& group, const DdpBenchOptions& o) {
  openblas_set_num_threads(1);  // one core per rank
  const int rank = group.rank(), world = group.size();
  std::ostream* out = rank == 0 ? &std::cout : nullptr;
  Setup s = make_setup(o, rank);
  const int64_t grad_bytes = s.model->parameter_count() * 4;
  if (out) {
    *out << "# lesson 10 --bench: MLP 784 -> " << o.hidden << " x " << o.layers << " -> 10, "
         << s.model->parameter_count() << " parameters (" << format_bytes(grad_bytes)
         << " of gradients), batch " << o.batch_size << " per rank, " << world << " rank(s), "
         << group.backend() << ", median of " << o.steps << " steps (slowest rank)\n";
  }
  BenchTable table(
      {{"mode", 20}, {"buckets", 8}, {"step(ms)", 9}, {"x compute", 10}, {"hidden", 7}});
  if (out) table.print_header(*out);
  const auto loss_backward = [&](Module& m) {
    cross_entropy(m.forward(Variable(s.batch.first)), s.batch.second).backward();
  };

  // Compute only: every rank at once, so the machine is as loaded as in the other rows.
  // On a shared machine the load drifts, so it is measured again right before every row
  // and each row's ratio is to that neighbour; the row shows the median of them all.
  std::vector<double> baselines;
  const auto measure_compute = [&] {
    baselines.push_back(slowest_median(time_steps(o, group,
                                                  [&] {
                                                    s.optimizer->zero_grad();
                                                    loss_backward(*s.model);
                                                    s.optimizer->step();
                                                  }),
                                       group));
    return baselines.back();
  };
  double compute = measure_compute();

  // The communication to hide: one all_reduce of every gradient, alone.
  Tensor flat = Tensor::zeros({s.model->parameter_count()});
  const double comm = slowest_median(
      time_steps(o, group, [&] { group.all_reduce(flat.span(), ReduceOp::SUM); }), group);
  table.add_row({"all_reduce alone", "1", format_fixed(1e3 * comm, 1), "-", "-"}, out);
  const auto baseline_median = [&] {
    std::vector<double> sorted = baselines;
    std::sort(sorted.begin(), sorted.end());
    return sorted[sorted.size() / 2];
  };

  const auto row = [&](const std::string& mode, const std::string& buckets, double t,
                       double hidden) {
    table.add_row({mode, buckets, format_fixed(1e3 * t, 1), format_fixed(t / compute, 2),
                   hidden < 0 ? "-" : format_fixed(100 * hidden, 0) + "%"},
                  out);
  };
  const auto hidden_share = [&](double t) {
    return std::clamp(1.0 - (t - compute) / comm, 0.0, 1.0);
  };
  // Lesson 09's NaiveDdp: every gradient after backward, per parameter or in one buffer.
  const auto naive = [&](GradSync variant) {
    Setup fresh = make_setup(o, rank);
    compute = measure_compute();
    NaiveDdp ddp(*fresh.model, group, variant);
    return slowest_median(time_steps(o, group,
                                     [&] {
                                       fresh.optimizer->zero_grad();
                                       loss_backward(ddp.module());
                                       ddp.sync_gradients();
                                       fresh.optimizer->step();
                                     }),
                          group);
  };
  const double per_param = naive(GradSync::per_param);
  row("naive per-param", std::to_string(s.model->parameters().size()), per_param,
      hidden_share(per_param));
  const double per_param_ratio = per_param / compute;
  const double flat_time = naive(GradSync::flat);
  row("naive flat", "1", flat_time, hidden_share(flat_time));

  // The Reducer at each cap (the first bucket the same), then torch's defaults.
  const double kOne = 1e6;  // MiB: "one bucket"
  std::vector<std::pair<double, double>> points;
  float worst = 0;
  double default_ratio = 0, default_hidden = 0;
  const std::vector<std::pair<std::string, std::pair<double, double>>> configs = {
      {"bucketed per-param", {0, 0}}, {"bucketed 0.25 MiB", {0.25, 0.25}},
      {"bucketed 1 MiB", {1, 1}},     {"bucketed 5 MiB", {5, 5}},
      {"bucketed 25 MiB", {25, 25}},  {"bucketed one", {kOne, kOne}},
      {"bucketed default", {1, 25}}};
  for (const auto& [name, caps] : configs) {
    Setup fresh = make_setup(o, rank);
    compute = measure_compute();
    DistributedDataParallel ddp(*fresh.model, group,
                                {.first_bucket_bytes = mib_to_bytes(caps.first),
                                 .bucket_cap_bytes = mib_to_bytes(caps.second)});
    const double t = slowest_median(
        time_steps(o, group,
                   [&] {
                     fresh.optimizer->zero_grad();
                     cross_entropy(ddp.forward(Variable(fresh.batch.first)), fresh.batch.second)
                         .backward();
                     fresh.optimizer->step();
                   }),
        group);
    worst = std::max(worst, divergence(*fresh.model, group));
    row(name, std::to_string(ddp.reducer().buckets().size()), t, hidden_share(t));
    if (name == "bucketed default") {
      default_ratio = t / compute;
      default_hidden = hidden_share(t);
    } else {
      points.emplace_back(caps.second == 0      ? 0.05
                          : caps.second == kOne ? 2000
                                                : caps.second,
                          1e3 * t);
    }
  }

  // Gradient accumulation: time per micro-batch, K - 1 of every K under no_sync.
  for (int k : {1, 2, 4, 8}) {
    Setup fresh = make_setup(o, rank);
    compute = measure_compute();
    DistributedDataParallel ddp(*fresh.model, group);
    const auto micro = [&] {
      cross_entropy(ddp.forward(Variable(fresh.batch.first)), fresh.batch.second).backward();
    };
    DdpBenchOptions fewer = o;
    fewer.steps = std::max(2, o.steps / k + 1);
    fewer.warmup = 1;
    const double t = slowest_median(time_steps(fewer, group,
                                               [&] {
                                                 fresh.optimizer->zero_grad();
                                                 {
                                                   auto guard = ddp.no_sync();
                                                   for (int i = 0; i < k - 1; ++i) micro();
                                                 }
                                                 micro();
                                                 fresh.optimizer->step();
                                               }),
                                    group) /
                     k;
    worst = std::max(worst, divergence(*fresh.model, group));
    row("no_sync K=" + std::to_string(k), "-", t, -1);
  }

  table.add_row(
      {"compute only (median)", "-", format_fixed(1e3 * baseline_median(), 1), "1.00", "-"}, out);
  const std::string summary =
      "bucketed default " + format_fixed(default_ratio, 2) + "x compute only, " +
      format_fixed(per_param_ratio / default_ratio, 2) + "x faster than naive per-param, " +
      format_fixed(100 * default_hidden, 0) + "% of the all-reduce hidden";
  table.add_note(summary, out);
  if (rank == 0) {
    table.write_csv(o.csv_path);
    if (!o.svg_path.empty()) {
      write_plot(o.svg_path, points, 1e3 * baseline_median(), 1e3 * per_param, 1e3 * flat_time);
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
