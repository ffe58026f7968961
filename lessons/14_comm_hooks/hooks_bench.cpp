// hooks_bench.cpp: lesson 14, given: the benchmark (see hooks_bench.h).
#include "hooks_bench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <utility>

#include "bench_stats.h"
#include "byte_stream.h"
#include "clock.h"
#include "ddp_bench_flags.h"
#include "ddp_training.h"
#include "emulated_link.h"
#include "hooked_ddp.h"
#include "optimizer.h"
#include "output_file.h"
#include "rng.h"
#include "sequential.h"
#include "sync_check.h"
#include "synthetic_batch.h"

namespace course {

// ---- The benchmark ---------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

struct BenchRow {
  std::string name;
  HookOptions hook;
  std::shared_ptr<Sequential> model;
  std::unique_ptr<Sgd> optimizer;
  std::unique_ptr<HookedDdp> sync;
  std::vector<double> times, bytes;
  double median = 0, bytes_per_step = 0, modelled_bytes = 0;
};

// Bytes one rank sends per step in the model of hooks_bench.h, for the reducer's buckets.
double modelled_bytes(const BenchRow& row, int world) {
  const double ring = 2.0 * (world - 1) / world;
  double total = 0;
  const std::vector<BucketInfo> buckets = row.sync->ddp().reducer().buckets();
  const std::vector<Variable> params = row.model->parameters();
  for (size_t b = 0; b < buckets.size(); ++b) {
    const int64_t values = buckets[b].bytes / 4;
    if (row.hook.hook == "fp16" || row.hook.hook == "bf16") {
      const int64_t per = (values + 2 * world - 1) / (2 * world) * 2;
      total += ring * 2.0 * static_cast<double>(per * world);
    } else if (row.hook.hook == "powersgd") {
      GradBucket bucket;
      for (size_t i : buckets[b].params) {
        bucket.params.push_back(i);
        bucket.shapes.push_back(params[i].shape());
      }
      const PowerSgdPlan plan = plan_powersgd(
          bucket,
          {.rank = row.hook.powersgd_rank, .min_compression_rate = row.hook.min_compression_rate});
      total += ring * 4.0 * static_cast<double>(plan.sent_elements());
    } else {
      total += ring * 4.0 * static_cast<double>(values);
    }
  }
  return total;
}

}  // namespace

Verdict run_hooks_bench(ProcessGroup& group, const DdpBenchOptions& o, std::ostream& out) {
  const int world = group.size(), rank = group.rank();
  const bool talk = rank == 0;
  const std::vector<int64_t> sizes = ddp_bench_sizes(o);
  std::vector<BenchRow> rows;
  const auto add_row = [&](const std::string& name, HookOptions hook) {
    BenchRow row;
    row.name = name;
    row.hook = std::move(hook);
    Rng rng(1);
    row.model = make_mlp(sizes, rng);
    row.optimizer = std::make_unique<Sgd>(row.model->parameters(), SgdOptions{.lr = 1e-3f});
    // Every row with gradients as views into the buckets (lesson 10): no copy into the
    // buckets and back, work that is not the hooks'.
    row.sync = std::make_unique<HookedDdp>(*row.model, group, row.hook,
                                           ReducerOptions{.gradient_as_bucket_view = true});
    rows.push_back(std::move(row));
  };
  add_row("no hook", {.hook = "none"});
  add_row("fp16", {.hook = "fp16"});
  add_row("bf16", {.hook = "bf16"});
  for (int r : {1, 2, 4}) {
    add_row("powersgd rank " + std::to_string(r),
            {.hook = "powersgd", .powersgd_rank = r, .start_iter = 0});
  }
  const auto batch = synthetic_batch(o.batch_size, 784, 10, rank);
  const int64_t params = rows[0].model->parameter_count();
  if (talk) {
    out << "# lesson 14 --bench: MLP 784 -> " << o.hidden << " x " << o.layers << " -> 10, "
        << params << " parameters (" << std::fixed << std::setprecision(1)
        << static_cast<double>(params) * 4 / (1 << 20) << " MiB of gradients), batch "
        << o.batch_size << " per rank, " << world << " rank(s), " << group.backend() << ", "
        << o.steps << " interleaved rounds, median per row of the slowest rank, "
        << "gradient_as_bucket_view" << std::endl;
    out << "# " << link_header() << std::endl;
  }
  for (int round = 0; round < o.warmup + o.steps; ++round) {
    for (BenchRow& row : rows) {
      group.barrier();
      const uint64_t sent = tcp_bytes_sent();
      const auto start = Clock::now();
      ddp_train_step(*row.model, *row.optimizer, *row.sync, {batch.first, batch.second});
      const double seconds = seconds_since(start);
      if (round < o.warmup) continue;
      row.times.push_back(seconds);
      row.bytes.push_back(static_cast<double>(tcp_bytes_sent() - sent));
    }
  }
  for (BenchRow& row : rows) {
    row.median = slowest_median(row.times, group);
    row.bytes_per_step = median(row.bytes);
    row.modelled_bytes = modelled_bytes(row, world);
  }
  std::string differs;
  for (BenchRow& row : rows) {
    const std::string problem =
        check_identical_across_ranks(*row.model, group, "after " + row.name);
    if (!problem.empty() && differs.empty()) differs = problem;
  }
  if (talk) {
    out << "#              mode  step(ms)  x no hook  MB/step sent  MB/step model  "
           "compression"
        << std::endl;
    for (const BenchRow& row : rows) {
      out << std::setw(19) << row.name << std::setw(10) << std::setprecision(1) << row.median * 1e3
          << std::setw(11) << std::setprecision(2) << rows[0].median / row.median << std::setw(14)
          << std::setprecision(2) << row.bytes_per_step / 1e6 << std::setw(15)
          << row.modelled_bytes / 1e6 << std::setw(12);
      if (row.modelled_bytes > 0) {  // one rank sends nothing: no ratio
        out << std::setprecision(1) << rows[0].modelled_bytes / row.modelled_bytes << "x";
      } else {
        out << "-";
      }
      out << std::endl;
    }
    if (group.backend() != "tcp") {
      out << "# MB/step sent counts the tcp transport only: " << group.backend()
          << " moves its bytes itself (0 here)" << std::endl;
    }
    if (!o.csv_path.empty()) {
      std::ofstream csv = open_output_file(o.csv_path);
      csv << "mode,ranks,backend,link,step_ms,speedup,bytes_sent,bytes_model\n";
      for (const BenchRow& row : rows) {
        csv << row.name << "," << world << "," << group.backend() << ",\""
            << link_from_env().describe() << "\"," << row.median * 1e3 << ","
            << rows[0].median / row.median << "," << static_cast<int64_t>(row.bytes_per_step) << ","
            << static_cast<int64_t>(row.modelled_bytes) << "\n";
      }
      out << "# wrote " << o.csv_path << std::endl;
    }
  }
  if (!differs.empty()) return Verdict::fail(differs);
  return Verdict::pass("every row left identical parameters on every rank");
}

}  // namespace course
