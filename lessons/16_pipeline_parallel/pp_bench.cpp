// pp_bench.cpp: see pp_bench.h.
#include "pp_bench.h"

#include <algorithm>
#include <chrono>
#include <iostream>

#include "bench_stats.h"
#include "bench_table.h"
#include "clock.h"
#include "emulated_link.h"
#include "error.h"
#include "ops.h"
#include "optimizer.h"
#include "rng.h"
#include "sequential.h"
#include "stage_runner.h"
#include "synthetic_batch.h"
#include "trace_recorder.h"

namespace course {

namespace {

constexpr int kWarmupSteps = 2;
constexpr double kModelledForwardMs = 2.0;

// The same batch on every stage (stage 0 reads its inputs, the last stage its targets).
Batch bench_batch(int64_t rows, int64_t in, int64_t classes) {
  auto [x, y] = synthetic_batch(rows, in, classes, /*salt=*/0);
  return {x, y};
}

// One process on the whole batch: the median step of make_mlp(sizes) with SGD.
double one_process_step_s(const std::vector<int64_t>& sizes, const Batch& batch, int steps) {
  Rng rng(3);
  const auto model = make_mlp(sizes, rng);
  Sgd sgd(model->parameters(), {.lr = 0.01f});
  std::vector<double> times;
  for (int t = 0; t < kWarmupSteps + steps; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    sgd.zero_grad();
    cross_entropy(model->forward(Variable(batch.inputs)), batch.targets).backward();
    sgd.step();
    if (t >= kWarmupSteps) {
      times.push_back(seconds_since(t0));
    }
  }
  return median(times);
}

std::string describe_cut(const std::vector<int>& bounds) {
  std::string text;
  for (size_t s = 0; s + 1 < bounds.size(); ++s) {
    // Half-open, as every range the course prints: stage s holds layers [a, b).
    text +=
        (s ? " [" : "[") + std::to_string(bounds[s]) + ", " + std::to_string(bounds[s + 1]) + ")";
  }
  return text;
}

// 1F1B at M = 8 on the cut `bounds`: rank 0 prints each stage's median compute per step,
// their spread (slowest / mean) and the slowest stage's step.
void balance_line(const DeviceMesh& mesh, const std::string& label,
                  const std::vector<int64_t>& sizes, const std::vector<int>& bounds,
                  const Batch& batch, int steps, std::ostream& out) {
  ProcessGroup& group = *mesh.group("pp");
  const int stages = group.size();
  StageRunner runner(mesh, sizes, 3, "1f1b", 8, batch.inputs.size(0) / 8, bounds);
  Sgd sgd(runner.module().parameters(), {.lr = 0.01f});
  std::vector<double> compute, step;
  group.barrier();
  for (int t = 0; t < kWarmupSteps + steps; ++t) {
    const auto t0 = std::chrono::steady_clock::now();
    sgd.zero_grad();
    const StepStats st = runner.step(batch);
    sgd.step();
    if (t < kWarmupSteps) continue;
    compute.push_back(st.compute_s);
    step.push_back(seconds_since(t0));
  }
  std::vector<float> mine = {static_cast<float>(median(compute)), static_cast<float>(median(step))};
  std::vector<float> every(2 * stages);
  group.all_gather(mine, every);
  if (group.rank() != 0) return;
  double worst = 0, mean = 0, slowest_step = 0;
  std::string per_stage;
  for (int s = 0; s < stages; ++s) {
    worst = std::max(worst, static_cast<double>(every[2 * s]));
    mean += every[2 * s] / stages;
    slowest_step = std::max(slowest_step, static_cast<double>(every[2 * s + 1]));
    per_stage += (s ? " " : "") + format_fixed(1e3 * every[2 * s], 2);
  }
  out << "# balanced by " << label << ": layers " << describe_cut(bounds)
      << "; compute ms per stage " << per_stage << " (slowest / mean "
      << format_fixed(worst / mean, 2) << "); 1f1b M = 8 step "
      << format_fixed(1e3 * slowest_step, 2) << " ms" << std::endl;
}

// One row per schedule and M of the table, each after warm-up steps (see pp_bench.h);
// `modelled_ms` > 0: every forward sleeps that long on top (StagePlacement). The timelines
// of M = 8 go to `trace_prefix`_<schedule>.json/.svg.
void sweep(const DeviceMesh& mesh, BenchTable& table, const std::vector<int64_t>& sizes,
           const std::vector<int>& bounds, const Batch& batch, int steps, double modelled_ms,
           double one_process, const std::string& trace_prefix, std::ostream& out) {
  ProcessGroup& group = *mesh.group("pp");
  const int stages = group.size();
  const int64_t rows = batch.inputs.size(0);
  for (const std::string& name : schedule_names()) {
    for (int m : {1, 2, 4, 8, 16}) {
      if (rows % m != 0) continue;
      StageRunner runner(mesh, sizes, 3, name, m, rows / m, bounds);
      runner.executor().set_modelled_forward_ms(modelled_ms);
      Sgd sgd(runner.module().parameters(), {.lr = 0.01f});
      std::vector<double> step, compute, wait, idle;
      StepStats last;
      // No barrier between steps, as in training: a stage that ends its step early waits
      // at the start of the next, so each iteration lasts the pipeline's period and the
      // waits hold the whole bubble.
      group.barrier();
      for (int t = 0; t < kWarmupSteps + steps; ++t) {
        const auto t0 = std::chrono::steady_clock::now();
        sgd.zero_grad();
        last = runner.step(batch);
        sgd.step();
        const double period = seconds_since(t0);
        if (t < kWarmupSteps) continue;
        step.push_back(period);
        compute.push_back(last.compute_s);
        wait.push_back(last.wait_s / period);
        idle.push_back((period - last.compute_s) / period);
      }
      // Per stage medians, then: the slowest step, the mean of the rest over stages.
      std::vector<float> mine = {
          static_cast<float>(median(step)),        static_cast<float>(median(compute)),
          static_cast<float>(median(wait)),        static_cast<float>(median(idle)),
          static_cast<float>(last.peak_in_flight), static_cast<float>(last.peak_saved_bytes)};
      std::vector<float> every(mine.size() * stages);
      group.all_gather(mine, every);
      if (group.rank() == 0) {
        double slowest = 0, c = 0, w = 0, i = 0, in_flight = 0;
        for (int s = 0; s < stages; ++s) {
          const float* r = &every[s * mine.size()];
          slowest = std::max(slowest, static_cast<double>(r[0]));
          c += r[1] / stages;
          w += r[2] / stages;
          i += r[3] / stages;
          in_flight = std::max(in_flight, static_cast<double>(r[4]));
        }
        const double model = static_cast<double>(stages - 1) / (m + stages - 1);
        table.add_row(
            {name, std::to_string(m), format_fixed(1e3 * slowest, 2), format_fixed(1e3 * c, 2),
             format_fixed(100 * w, 1), format_fixed(100 * i, 1), format_fixed(100 * model, 1),
             format_fixed(in_flight, 0), format_fixed(every[5] / (1 << 20), 2),
             format_fixed(
                 (modelled_ms > 0 ? 3e-3 * modelled_ms * m * stages : one_process) / slowest, 2)},
            &out);
      }
      if (m == 8 && !trace_prefix.empty()) {
        TraceRecorder trace(group.rank());
        group.barrier();
        sgd.zero_grad();
        runner.step(batch, &trace);
        const auto spans = gather_spans(trace, group);
        if (group.rank() == 0) {
          write_chrome_trace(trace_prefix + "_" + name + ".json", spans);
          write_timeline_svg(
              trace_prefix + "_" + name + ".svg", spans,
              "lesson 16: " + name + (modelled_ms > 0 ? " on modelled compute" : "") +
                  ", P = " + std::to_string(stages) + ", M = 8 (one row pair per stage)");
        }
      }
    }
  }
}

}  // namespace

Verdict run_pipeline_bench(const DeviceMesh& mesh, const PipelineBenchOptions& o,
                           std::ostream& out) {
  if (mesh.size("dp") != 1) {
    throw ConfigError("the bench runs one pipeline of every rank: a mesh of " +
                      std::to_string(mesh.size("dp")) + " replicas given");
  }
  ProcessGroup& group = *mesh.group("pp");
  const int stages = group.size();
  std::vector<int64_t> sizes = {784};
  for (int i = 0; i < o.layers; ++i) sizes.push_back(o.width);
  sizes.push_back(10);
  const std::vector<int> bounds = partition_layers(layer_parameter_counts(sizes), stages);
  const Batch batch = bench_batch(o.batch, sizes.front(), sizes.back());
  double one_process = 0;
  if (group.rank() == 0) {
    one_process = one_process_step_s(sizes, batch, o.steps);
    out << "# lesson 16 pipeline: 784 -> " << o.layers << " x " << o.width << " -> 10, batch "
        << o.batch << ", P = " << stages << " stages (layers " << describe_cut(bounds) << "), "
        << link_header()
        << "\n# one process on the whole batch: " << format_fixed(1e3 * one_process, 2)
        << " ms per step" << std::endl;
  }
  BenchTable table({{"schedule", 9},
                    {"M", 4},
                    {"step ms", 9},
                    {"compute ms", 11},
                    {"wait %", 8},
                    {"idle %", 8},
                    {"model %", 8},
                    {"in flight", 10},
                    {"act MiB", 9},
                    {"speed-up", 9}});
  if (group.rank() == 0) table.print_header(out);
  sweep(mesh, table, sizes, bounds, batch, o.steps, 0.0, one_process, o.trace_prefix, out);
  // The cut by parameters against the cut by measured time (rank 0 times each layer on a
  // micro-batch of M = 8; every rank cuts the same way).
  std::vector<float> seconds(sizes.size() - 1);
  if (group.rank() == 0) {
    const std::vector<double> measured = measure_layer_seconds(sizes, o.batch / 8);
    std::copy(measured.begin(), measured.end(), seconds.begin());
  }
  group.broadcast(seconds, 0);
  const std::vector<int> by_time =
      partition_layers(std::vector<double>(seconds.begin(), seconds.end()), stages);
  balance_line(mesh, "parameters", sizes, bounds, batch, o.steps, out);
  balance_line(mesh, "measured time", sizes, by_time, batch, o.steps, out);
  if (group.rank() == 0) {
    table.add_note("model % = (P-1)/(M+P-1); wait % = time blocked on receives / step", &out);
  }
  // Modelled compute: a model too small to matter, every forward sleeping kModelledForwardMs
  // and every backward twice that, so the stages do not compete for the cores and the
  // schedule alone decides who waits. The same columns; speed-up against P * M * 3f.
  const std::vector<int64_t> tiny = {32, 16, 16, 16, 16, 16, 16, 16, 16, 10};
  const std::vector<int> tiny_bounds = partition_layers(layer_parameter_counts(tiny), stages);
  const Batch tiny_batch = bench_batch(64, tiny.front(), tiny.back());
  if (group.rank() == 0) {
    out << "# modelled compute: f = " << format_fixed(kModelledForwardMs, 1)
        << " ms per forward, 2f per backward (the stage sleeps); 32 -> 8 x 16 -> 10, batch 64"
        << std::endl;
    table.print_header(out);
  }
  sweep(mesh, table, tiny, tiny_bounds, tiny_batch, o.steps, kModelledForwardMs, 0.0,
        o.trace_prefix.empty() ? "" : o.trace_prefix + "_modelled", out);
  if (group.rank() == 0) {
    table.add_note("rows 11-20: modelled compute (f = " + format_fixed(kModelledForwardMs, 1) +
                       " ms per forward, 2f per backward)",
                   &out);
    table.write_csv(o.csv_path);
    out << "# wrote " << o.csv_path << ", " << o.trace_prefix
        << "{,_modelled}_{gpipe,1f1b}.{json,svg}" << std::endl;
  }
  return Verdict::pass("bench: " + std::to_string(stages) + " stages, both schedules");
}

}  // namespace course
