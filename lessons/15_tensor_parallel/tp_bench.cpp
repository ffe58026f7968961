// tp_bench.cpp: lesson 15, given: the benchmark of tp_bench.h: calibration, rows, model
// and crossovers.
#include "tp_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <sstream>

#include "bench_stats.h"
#include "bench_table.h"
#include "byte_stream.h"
#include "clock.h"
#include "distributed_data_parallel.h"
#include "emulated_link.h"
#include "model_state_bytes.h"
#include "ops.h"
#include "optimizer.h"
#include "synthetic_batch.h"
#include "tp_training_flags.h"
#include "vocab_parallel_loss.h"

namespace course {

namespace {

using Clock = std::chrono::steady_clock;

struct Calibration {
  double per_param = 0;  // seconds of one Adam step per parameter
  double alpha = 0;      // seconds per ring step
  double beta = 1e9;     // bytes per second per link
};

double all_reduce_seconds(const Calibration& c, double bytes, int g) {
  if (g <= 1) return 0;
  return 2.0 * (g - 1) * c.alpha + 2.0 * (g - 1) / g * bytes / c.beta;
}

Calibration calibrate(const ModelShape& shape, ProcessGroup& world) {
  Calibration c;
  // Adam's step over the whole model, every rank at once: the mean of the ranks' medians.
  {
    Rng rng(1);
    auto serial = make_serial_model(shape, rng);
    for (const Variable& p : serial->parameters()) p.set_grad(Tensor::full(p.shape(), 1e-3f));
    TpTrainingOptions adam;
    adam.optimizer = "adam";
    std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(adam, serial->parameters());
    std::vector<double> times;
    for (int i = 0; i < 6; ++i) {
      const auto start = Clock::now();
      optimizer->step();
      if (i > 0) times.push_back(seconds_since(start));
    }
    std::vector<float> t{static_cast<float>(median(times))};
    world.all_reduce(t, ReduceOp::AVG);
    c.per_param = t[0] / static_cast<double>(shape.parameters());
  }
  const int N = world.size();
  if (N == 1) return c;
  // α and β: the ring on every rank at two sizes, the slowest rank's median.
  const auto time_all_reduce = [&](size_t count) {
    std::vector<float> data(count, 1.0f);
    std::vector<double> times;
    for (int i = 0; i < 7; ++i) {
      world.barrier();
      const auto start = Clock::now();
      world.all_reduce(data, ReduceOp::SUM);
      if (i >= 2) times.push_back(seconds_since(start));
    }
    return median(slowest_samples(times, world));
  };
  const double n1 = 4.0 * 4096, n2 = 4.0 * (1 << 20);
  const double t1 = time_all_reduce(4096), t2 = time_all_reduce(1 << 20);
  const double f = 2.0 * (N - 1) / N;
  c.beta = f * (n2 - n1) / std::max(t2 - t1, 1e-9);
  c.alpha = std::max(0.0, (t1 - f * n1 / c.beta) / (2.0 * (N - 1)));
  return c;
}

// The framing one all-reduce call adds to its payload on `group` (rank 0's bytes; every
// rank calls).
int64_t framing_per_call(ProcessGroup& group) {
  if (group.size() == 1) return 0;
  std::vector<float> data(1000, 1.0f);
  group.barrier();
  const uint64_t before = tcp_bytes_sent();
  group.all_reduce(data, ReduceOp::SUM);
  const auto sent = static_cast<int64_t>(tcp_bytes_sent() - before);
  return sent - ring_all_reduce_bytes(1000, group.size(), group.rank());
}

struct Row {
  int T = 1, D = 1;
  int64_t b = 0;
  double step = 0, step_model = 0;
  double comm_fixed = 0, comm_slope = 0;  // the model's communication: fixed + slope * b
  double fixed = 0, slope = 0;            // the model's whole step: fixed + slope * b
  double sent = 0, sent_model = 0;
  double state = 0, state_model = 0, peak = 0;
};

}  // namespace

int64_t ring_all_reduce_bytes(int64_t count, int g, int rank) {
  if (g <= 1) return 0;
  const auto seg = [&](int i) {
    i = ((i % g) + g) % g;
    return count / g + (i < count % g ? 1 : 0);
  };
  return 4 * (2 * count - seg(rank + 1) - seg(rank + 2));
}

namespace {

// Compute per step, c0 + c1 b for DDP: the least-squares line through the DDP rows' step
// times less their modelled communication.
std::pair<double, double> fit_ddp_compute(const std::vector<Row>& ddp) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Row& r : ddp) {
    const double x = static_cast<double>(r.b);
    const double y = r.step - r.comm_fixed - r.comm_slope * x;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double c1 = n > 1 ? (n * sxy - sx * sy) / std::max(n * sxx - sx * sx, 1e-30) : 0;
  return {(sy - c1 * sx) / std::max(n, 1.0), c1};
}

// The rows as one table: printed to `out` and written as CSV to `csv_path`.
void write_rows(const std::vector<Row>& rows, size_t per_t, const std::string& csv_path,
                std::ostream& out) {
  BenchTable table({{"T", 3},
                    {"D", 2},
                    {"b", 5},
                    {"step ms", 9},
                    {"model ms", 9},
                    {"KB sent", 9},
                    {"KB model", 9},
                    {"sent/model", 11},
                    {"state MiB", 11},
                    {"model MiB", 10},
                    {"peak MiB", 9},
                    {"x DDP", 6}});
  table.print_header(out);
  const double mib = 1 << 20;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    const double ddp = rows[i % per_t].step;
    table.add_row({std::to_string(row.T), std::to_string(row.D), std::to_string(row.b),
                   format_fixed(row.step * 1e3, 2), format_fixed(row.step_model * 1e3, 2),
                   format_fixed(row.sent / 1e3, 1), format_fixed(row.sent_model / 1e3, 1),
                   format_fixed(row.sent_model > 0 ? row.sent / row.sent_model : 1.0, 4),
                   format_fixed(row.state / mib, 2), format_fixed(row.state_model / mib, 2),
                   format_fixed(row.peak / mib, 2), format_fixed(ddp / row.step, 2)},
                  &out);
  }
  table.write_csv(csv_path);
}

// Where TP's step time (rows tp) meets DDP's (rows ddp): the last b at which TP is faster
// and the next one slower, interpolated on a log scale; or what held over the whole sweep.
std::string measured_crossover(const Row* tp, const Row* ddp, size_t n) {
  for (size_t i = n - 1; i > 0; --i) {
    const double d0 = tp[i - 1].step - ddp[i - 1].step, d1 = tp[i].step - ddp[i].step;
    if (d0 < 0 && d1 >= 0) {
      const double x0 = std::log(static_cast<double>(tp[i - 1].b));
      const double x1 = std::log(static_cast<double>(tp[i].b));
      return "b = " + format_fixed(std::exp(x0 + (x1 - x0) * d0 / (d0 - d1)), 0);
    }
  }
  return tp[n - 1].step < ddp[n - 1].step ? "TP faster at every b of the sweep"
                                          : "DDP faster at every b of the sweep";
}

}  // namespace

Verdict run_tp_bench(const TpTrainingOptions& o, ProcessGroup& world, Subgroups& subgroups,
                     const TpBenchOptions& bench, std::ostream& out) {
  const int N = world.size(), rank = world.rank();
  const bool talk = rank == 0;
  const ModelShape shape = tp_model_shape(o);
  const double psi = static_cast<double>(shape.parameters());
  const double psi_rep = static_cast<double>(shape.replicated_parameters());
  const bool counted = world.backend() == "tcp";
  const Calibration cal = calibrate(shape, world);
  Rng rng(o.seed);
  const NamedTensors init = make_serial_model(shape, rng)->state_dict();
  std::vector<int> sizes{1, 2, N};
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<Row> rows;
  std::string differs;
  for (int T : sizes) {
    if (N % T != 0 || (4 * shape.hidden) % T != 0) continue;
    const DeviceMesh mesh = init_device_mesh(subgroups, tp_mesh_dims(N, T));
    ProcessGroup& tp = *mesh.group("tp");
    ProcessGroup& dp = *mesh.group("dp");
    const int D = mesh.size("dp");
    // T = 1: a TP group of one rank, whose collectives move nothing (lesson 10's DDP).
    const int64_t frame_tp = counted ? framing_per_call(tp) : 0;
    const int64_t frame_dp = counted && D > 1 ? framing_per_call(dp) : 0;
    for (int64_t b : bench.batches) {
      Row row{.T = T, .D = D, .b = b};
      TensorParallelMlp model(init, shape, tp);
      std::unique_ptr<GradientSync> sync = make_tp_dp_sync(model, mesh);
      TpTrainingOptions adam = o;
      adam.optimizer = "adam";
      std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(adam, model.parameters());
      auto [x, y] = synthetic_batch(T * b, shape.inputs, shape.classes, mesh.coordinate("dp"));
      const Batch batch{x, y};
      for (int i = 0; i < bench.warmup; ++i) tp_train_step(model, *optimizer, sync.get(), batch);
      std::vector<double> times, sent;
      const int64_t live_before = Storage::live_cpu_bytes();
      Storage::reset_peak_cpu_bytes();
      for (int i = 0; i < bench.steps; ++i) {
        world.barrier();
        const uint64_t before = tcp_bytes_sent();
        const auto start = Clock::now();
        tp_train_step(model, *optimizer, sync.get(), batch);
        times.push_back(seconds_since(start));
        sent.push_back(static_cast<double>(tcp_bytes_sent() - before));
      }
      row.peak = static_cast<double>(Storage::peak_cpu_bytes() - live_before);
      row.step = median(slowest_samples(times, world));
      row.sent = counted ? median(sent) : 0;
      row.state = static_cast<double>(model_state_bytes(model, *optimizer).total());
      row.state_model = 16.0 * static_cast<double>(shape.parameters_per_rank(T));
      // The model's bytes (rank 0's) and communication seconds.
      const int64_t rows_g = T * b;
      const int tp_rank = tp.rank();
      const int calls_tp = 2 * shape.blocks + 3;
      double bytes = 0;
      if (T > 1) {
        bytes += (2 * shape.blocks + 1) * ring_all_reduce_bytes(rows_g * shape.hidden, T, tp_rank) +
                 ring_all_reduce_bytes(rows_g, T, tp_rank) +
                 ring_all_reduce_bytes(2 * rows_g, T, tp_rank) +
                 static_cast<double>(calls_tp) * frame_tp;
        // calls_tp ring all-reduces: a latency each, and bytes that grow with b.
        row.comm_fixed += calls_tp * all_reduce_seconds(cal, 0, T);
        row.comm_slope += 2.0 * (T - 1) / T * 4.0 * T *
                          static_cast<double>(shape.hidden * (2 * shape.blocks + 1) + 3) / cal.beta;
      }
      if (auto* ddp = dynamic_cast<DistributedDataParallel*>(sync.get())) {
        for (const BucketInfo& bucket : ddp->reducer().buckets()) {
          bytes +=
              static_cast<double>(ring_all_reduce_bytes(bucket.bytes / 4, D, dp.rank()) + frame_dp);
          row.comm_fixed += all_reduce_seconds(cal, static_cast<double>(bucket.bytes), D);
        }
      }
      row.sent_model = counted ? bytes : 0;
      const std::string problem = check_identical_across_ranks(
          model.full_state_dict(), world,
          "after the row T " + std::to_string(T) + ", b " + std::to_string(b));
      if (!problem.empty() && differs.empty()) differs = problem;
      rows.push_back(row);
    }
  }
  // The model's steps. Compute: DDP's, measured (its rows less their modelled
  // communication, a line in b); a TP rank runs T b examples through 1/T of the split
  // layers and all of the replicated ones, the flops of b examples of the whole model plus
  // T - 1 more copies of the replicated part; Adam steps only this rank's parameters.
  const size_t nb = bench.batches.size();
  const auto [c0, c1] =
      fit_ddp_compute(std::vector<Row>(rows.begin(), rows.begin() + static_cast<int64_t>(nb)));
  for (Row& row : rows) {
    row.fixed = c0 + cal.per_param * (static_cast<double>(shape.parameters_per_rank(row.T)) - psi) +
                row.comm_fixed;
    row.slope = c1 * (psi + (row.T - 1) * psi_rep) / psi + row.comm_slope;
    row.step_model = row.fixed + row.slope * static_cast<double>(row.b);
  }
  if (talk) {
    out << "# lesson 15 --bench: " << N << " ranks, " << world.backend() << ", model 784 -> "
        << shape.hidden << " -> " << shape.blocks << " x (" << shape.hidden << " -> "
        << 4 * shape.hidden << " -> " << shape.hidden << ") -> 10, " << shape.parameters()
        << " parameters (" << shape.replicated_parameters() << " replicated), Adam, " << bench.steps
        << " steps per row, median of the slowest rank\n# " << link_header()
        << "\n# measured here: ring alpha = " << format_fixed(cal.alpha * 1e6, 1)
        << " us per step, beta = " << format_fixed(cal.beta / 1e9, 3) << " GB/s; Adam "
        << format_fixed(cal.per_param * 1e9, 2) << " ns per parameter; DDP's compute "
        << format_fixed(c0 * 1e3, 2) << " ms + " << format_fixed(c1 * 1e6, 1)
        << " us per example (its rows less their modelled communication)" << std::endl;
    write_rows(rows, nb, bench.csv_path, out);
    for (size_t s = 1; s * nb < rows.size(); ++s) {
      const Row* tp = &rows[s * nb];
      const double b_star = (rows[0].fixed - tp[0].fixed) / (tp[0].slope - rows[0].slope);
      out << "# crossover T = " << tp[0].T << " vs DDP: measured "
          << measured_crossover(tp, rows.data(), nb) << ", predicted b = "
          << (tp[0].slope > rows[0].slope && b_star > 0 ? format_fixed(b_star, 0)
                                                        : std::string("none"))
          << " (per-rank batch; TP pays below it)" << std::endl;
    }
  }
  if (!differs.empty()) return Verdict::fail(differs);
  return Verdict::pass(
      "every row left its replicas equal; the table above has the "
      "measured and modelled figures");
}

}  // namespace course
