// ddp_compare.cpp: lesson 09, the side-by-side table of `./lesson09 --compare` (see
// ddp_compare.h).
#include "ddp_compare.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "bench_table.h"
#include "data_parallel.h"
#include "ddp_training.h"
#include "distributed_sampler.h"
#include "emulated_link.h"
#include "naive_ddp.h"
#include "ops.h"
#include "step_breakdown.h"
#include "tensor_ops.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

// The peak resident set since the last reset_peak_memory(), in MiB (Linux: VmHWM).
void reset_peak_memory() {
  malloc_trim(0);  // hand freed heap back first, so the reset starts from what is in use
  std::ofstream("/proc/self/clear_refs") << "5";
}
double peak_memory_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

struct Row {
  std::string name;
  double step = 0, compute = 0, comm = 0, wait = 0, peak_mib = 0;
  int64_t messages = 0;
};

// A batch of `size` examples starting at `first` (the solo rows read the data in order).
Batch slice(const Dataset& d, int64_t first, int64_t size) {
  std::vector<int64_t> ids(static_cast<size_t>(size));
  std::iota(ids.begin(), ids.end(), first % std::max<int64_t>(d.size() - size + 1, 1));
  return Batch{gather_rows(d.inputs, ids), gather_rows(d.targets, ids)};
}

Row one_process(const DdpCompareOptions& o, const DdpData& data, const DdpTrainingOptions& t) {
  Row row{.name = "one process"};
  reset_peak_memory();
  auto model = make_ddp_model(t, data.sizes, 0);
  auto opt = make_ddp_optimizer(t, model->parameters());
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const Batch b = slice(data.train, s * o.global_batch, o.global_batch);
    const auto start = Clock::now();
    train_step(*model, *opt, b);
    if (s >= o.warmup) row.step += seconds_since(start) / o.steps;
  }
  row.compute = row.step;
  row.peak_mib = peak_memory_mib();
  return row;
}

// PyTorch's rows beside the table (one process, torch DDP), from tools/torch_ddp_bench.py
// when Debian's python3-torch imports; one line saying why not otherwise.
void torch_rows(const DdpCompareOptions& o, const std::vector<int64_t>& sizes, int world,
                std::ostream& out) {
  const std::string script = "tools/torch_ddp_bench.py";
  if (!std::ifstream(script)) {
    out << "torch rows: skipped (" << script
        << " not found: run from the repository root, as make bench does)" << std::endl;
    return;
  }
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    out << "torch rows: skipped (/usr/bin/python3 cannot import torch; apt-get install "
           "python3-torch)"
        << std::endl;
    return;
  }
  std::string layers;
  for (int64_t s : sizes) layers += (layers.empty() ? "" : ",") + std::to_string(s);
  const std::string command = "/usr/bin/python3 " + script + " --compare --np " +
                              std::to_string(world) + " --sizes " + layers + " --global-batch " +
                              std::to_string(o.global_batch) + " --warmup " +
                              std::to_string(o.warmup) + " --steps " + std::to_string(o.steps);
  out << std::flush;
  if (std::system(command.c_str()) != 0) out << "torch rows: " << command << " failed" << std::endl;
}

// Lesson 08's timed step (step_breakdown.h), its phases sorted into this table's columns.
Row data_parallel(const DdpCompareOptions& o, const DdpData& data, const DdpTrainingOptions& t,
                  int threads) {
  Row row{.name = "DataParallel, " + std::to_string(threads) + " threads"};
  reset_peak_memory();
  std::shared_ptr<Module> master = make_ddp_model(t, data.sizes, 0);
  const std::vector<int64_t> sizes = data.sizes;
  DataParallel dp(
      master,
      [sizes] {
        Rng r(0);
        return std::shared_ptr<Module>(make_mlp(sizes, r));
      },
      threads);
  auto opt = make_ddp_optimizer(t, dp.parameters());
  StepBreakdown warm(threads), b(threads);
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    timed_train_step(dp, *opt, slice(data.train, s * o.global_batch, o.global_batch),
                     s < o.warmup ? warm : b);
  }
  const auto mean = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
  };
  const double steps = static_cast<double>(b.steps);
  row.step = b.total / steps;
  row.comm = (b.replicate + b.scatter + b.reduce_add) / steps;  // copies between devices
  row.wait = (std::max(0.0, b.forward - mean(b.forward_busy)) +
              std::max(0.0, b.backward - mean(b.backward_busy))) /
             steps;
  row.compute = std::max(0.0, row.step - row.comm - row.wait);
  row.peak_mib = peak_memory_mib();
  return row;
}

Row naive_ddp(const DdpCompareOptions& o, const DdpData& data, const DdpTrainingOptions& t,
              ProcessGroup& pg, GradSync variant) {
  const int world = pg.size(), rank = pg.rank();
  Row row{.name = "naive DDP " + pg.backend() + " " + grad_sync_name(variant) + ", " +
                  std::to_string(world) + " ranks"};
  reset_peak_memory();
  auto model = make_ddp_model(t, data.sizes, rank);
  NaiveDdp ddp(*model, pg, variant);
  auto opt = make_ddp_optimizer(t, model->parameters());
  const int64_t per_rank = o.global_batch / world;
  DataLoader loader(data.train, per_rank,
                    std::make_shared<DistributedSampler>(data.train.size(), world, rank, false));
  loader.start_epoch(0);
  std::vector<float> compute(static_cast<size_t>(o.steps)), sync(static_cast<size_t>(o.steps));
  pg.barrier();
  Clock::time_point start;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    std::optional<Batch> b = loader.next();
    if (!b) {
      loader.start_epoch(s);
      b = loader.next();
    }
    if (s == o.warmup) start = Clock::now();
    DdpStepTimes times;
    ddp_train_step(*model, *opt, ddp, *b, &times);
    if (s >= o.warmup) {
      compute[static_cast<size_t>(s - o.warmup)] = static_cast<float>(times.compute);
      sync[static_cast<size_t>(s - o.warmup)] = static_cast<float>(times.sync);
    }
  }
  row.step = seconds_since(start) / o.steps;
  // Waiting: at each step, how much longer the slowest rank computed than this one.
  std::vector<float> all(compute.size() * static_cast<size_t>(world));
  pg.all_gather(compute, all);
  for (size_t s = 0; s < compute.size(); ++s) {
    float slowest = 0;
    for (int r = 0; r < world; ++r) slowest = std::max(slowest, all[r * compute.size() + s]);
    const double wait = std::min<double>(slowest - compute[s], sync[s]);
    row.wait += wait / o.steps;
    row.comm += (sync[s] - wait) / o.steps;
    row.compute += compute[s] / static_cast<double>(o.steps);
  }
  row.messages = ddp.messages_per_step();
  // Averages over ranks; the peak is the largest process's.
  std::vector<float> v{static_cast<float>(row.compute), static_cast<float>(row.comm),
                       static_cast<float>(row.wait), static_cast<float>(row.step)};
  pg.all_reduce(v, ReduceOp::AVG);
  row.compute = v[0];
  row.comm = v[1];
  row.wait = v[2];
  row.step = v[3];
  std::vector<float> peak{static_cast<float>(peak_memory_mib())};
  pg.all_reduce(peak, ReduceOp::MAX);
  row.peak_mib = peak[0];
  return row;
}

// The latency term of one all-reduce: the mean time of a one-float all-reduce.
double small_all_reduce_seconds(ProcessGroup& pg) {
  std::vector<float> one{1.0f};
  for (int i = 0; i < 5; ++i) pg.all_reduce(one, ReduceOp::SUM);
  pg.barrier();
  constexpr int kRepeats = 50;
  const auto start = Clock::now();
  for (int i = 0; i < kRepeats; ++i) pg.all_reduce(one, ReduceOp::SUM);
  std::vector<float> t{static_cast<float>(seconds_since(start) / kRepeats)};
  pg.all_reduce(t, ReduceOp::MAX);
  return t[0];
}

}  // namespace

Verdict run_ddp_compare(DriverContext& ctx, const DdpCompareOptions& o, const GroupRecipe& recipe,
                        std::ostream& out) {
  const int world = ctx.world(), rank = ctx.rank();
  if (o.global_batch % world != 0) {
    throw ConfigError("--compare: the global batch " + std::to_string(o.global_batch) +
                      " does not divide by " + std::to_string(world) +
                      " ranks; pick --global-batch or --np so that it does");
  }
  DdpTrainingOptions t;
  t.data = o.data;
  t.hidden = o.hidden;
  t.limit = o.global_batch * (o.warmup + o.steps);
  DdpData data = load_ddp_data(t);
  // Keep only what the rows read, in storage of its own, so the peak memory column shows
  // models, gradients and activations on top of the examples, not the whole file.
  data.train.inputs = data.train.inputs.clone();
  data.train.targets = data.train.targets.clone();
  data.test = Dataset();
  BenchTable table({{"configuration", 34},
                    {"samples/s", 10},
                    {"x 1p", 6},
                    {"step ms", 9},
                    {"compute", 9},
                    {"comm", 9},
                    {"wait", 9},
                    {"peak MiB", 9},
                    {"msgs/step", 10}});
  std::vector<Row> rows;
  double solo_rate = 0;
  const auto add = [&](const Row& r) {
    rows.push_back(r);
    if (rank != 0) return;
    const double rate = o.global_batch / r.step;
    if (solo_rate == 0) solo_rate = rate;
    table.add_row({r.name, format_fixed(rate, 0), format_fixed(rate / solo_rate, 2),
                   format_fixed(1e3 * r.step, 2), format_fixed(1e3 * r.compute, 2),
                   format_fixed(1e3 * r.comm, 2), format_fixed(1e3 * r.wait, 2),
                   format_fixed(r.peak_mib, 0), std::to_string(r.messages)},
                  &out);
    out.flush();
  };
  if (rank == 0) {
    out << "compare: MLP " << data.sizes.front();
    for (size_t i = 1; i < data.sizes.size(); ++i) out << "-" << data.sizes[i];
    out << ", SGD, global batch " << o.global_batch << ", " << o.warmup << " warm-up + " << o.steps
        << " timed steps per row, K = " << world << "\n"
        << link_header() << "\n";
    table.print_header(out);
    add(one_process(o, data, t));
    add(data_parallel(o, data, t, world));
    ctx.store().set("lesson09/compare/solo-done", "1");
  } else {
    ctx.store().get("lesson09/compare/solo-done");  // asleep while rank 0 runs alone
    rows.resize(2);
  }
  std::map<std::string, double> latency;  // one all-reduce of one float, per backend
  std::vector<std::string> backends = available_backends();
  for (const std::string& backend : backends) {
    GroupRecipe r = recipe;
    r.name = "lesson09-compare-" + backend;
    auto pg = make_process_group(backend, ctx.store(), rank, world, r);
    const double alpha = small_all_reduce_seconds(*pg);
    if (rank == 0) latency[backend] = alpha;
    for (GradSync v : {GradSync::per_param, GradSync::flat}) add(naive_ddp(o, data, t, *pg, v));
  }
  if (rank != 0) return Verdict::pass("compare done");

  // Ratios against rows of the same run (no targets are judged here).
  for (size_t i = 2; i + 1 < rows.size(); i += 2) {
    const Row &per = rows[i], &flat = rows[i + 1];
    const std::string backend = per.name.substr(10, per.name.find(' ', 10) - 10);
    table.add_note(per.name.substr(0, per.name.find(" per-param")) +
                       ": communication per step, per-param / flat = " +
                       format_fixed(per.comm / std::max(flat.comm, 1e-12), 2) +
                       "; one all-reduce of one float takes " +
                       format_fixed(1e6 * latency[backend], 0) + " us, so per-param's " +
                       std::to_string(per.messages - flat.messages) +
                       " extra all-reduces add about " +
                       format_fixed(1e3 * latency[backend] * (per.messages - flat.messages), 2) +
                       " ms of latency",
                   &out);
  }
  const double dp_step = rows[1].step;
  double best_ddp = 1e30;
  for (size_t i = 2; i < rows.size(); ++i) best_ddp = std::min(best_ddp, rows[i].step);
  table.add_note("fastest naive DDP step vs DataParallel's: " +
                     format_fixed(dp_step / best_ddp, 2) + "x the samples/s",
                 &out);
  const std::string csv = o.csv_path.empty()
                              ? "bench-results/lesson09_compare_np" + std::to_string(world) + ".csv"
                              : o.csv_path;
  table.write_csv(csv);
  out << "table saved to " << csv << "\n";
  torch_rows(o, data.sizes, world, out);
  return Verdict::pass("compare table printed (" + std::to_string(rows.size()) + " rows)");
}

}  // namespace course
