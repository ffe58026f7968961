// sharding_bench.cpp: lesson 13, given: the benchmark (see sharding_bench.h).
#include "sharding_bench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iomanip>

#include "bench_stats.h"
#include "byte_stream.h"
#include "clock.h"
#include "collective_bench.h"
#include "ddp_bench_flags.h"
#include "ddp_training.h"
#include "distributed_data_parallel.h"
#include "emulated_link.h"
#include "fsdp.h"
#include "optimizer.h"
#include "output_file.h"
#include "sync_check.h"
#include "synthetic_batch.h"

namespace course {

// ---- The benchmark ----------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

// The ring's halves beside the whole ring, in nccl-tests' columns (collective_bench.h):
// size is the whole buffer (N*k values for the halves), busbw = algbw * the collective's
// factor ((N-1)/N for each half, 2(N-1)/N for the all-reduce): the busbw of the three
// should be alike, each near what one link carries.
void print_halves_table(ProcessGroup& group, std::ostream& out, bool talk) {
  const int world = group.size();
  CollectiveBenchTable table;
  table.begin_block(
      "the ring's halves beside the whole ring (busbw = algbw x factor: "
      "all_reduce 2(N-1)/N, halves (N-1)/N)",
      talk ? &out : nullptr);
  for (size_t bytes : {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20}) {
    const size_t count = bytes / 4 / static_cast<size_t>(world) * static_cast<size_t>(world);
    std::vector<float> whole(count, 1.0f), part(count / static_cast<size_t>(world), 1.0f);
    const int iterations = bytes >= (size_t{64} << 20) ? 3 : 10;
    const struct {
      const char* name;
      Collective collective;
      std::function<void()> op;
    } rows[] = {
        {"all_reduce", Collective::all_reduce, [&] { group.all_reduce(whole, ReduceOp::SUM); }},
        {"reduce_scatter", Collective::reduce_scatter,
         [&] { group.reduce_scatter(whole, part, ReduceOp::SUM); }},
        {"all_gather", Collective::all_gather, [&] { group.all_gather(part, whole); }},
    };
    for (const auto& row : rows) {
      const CollectiveTiming timing =
          time_collective(group, row.collective, count * 4, iterations, 1, row.op);
      table.add(row.name, world, timing, "float",
                row.collective == Collective::all_gather ? "none" : "sum", talk ? &out : nullptr);
    }
  }
}

struct StageRow {
  std::string name;
  int stage = 0;
  double median = 0, values_sent = 0, values_model = 0;
  double ledger_peak = 0, model_bytes = 0, measured = 0;
};

}  // namespace

Verdict run_sharding_bench(ProcessGroup& group, const DdpBenchOptions& o, std::ostream& out) {
  const int world = group.size(), rank = group.rank();
  const bool talk = rank == 0;
  const std::vector<int64_t> sizes = ddp_bench_sizes(o);
  const auto [bx, by] = synthetic_batch(o.batch_size, 784, 10, rank);
  const Batch batch{bx, by};
  DdpTrainingOptions adam;
  adam.optimizer = "adam";
  adam.lr = 1e-4f;
  std::vector<StageRow> rows;
  std::string differs;
  int64_t psi = 0;
  for (int stage = 0; stage <= 3; ++stage) {
    StageRow row;
    row.stage = stage;
    row.name = stage == 0 ? "DDP (lesson 10)" : "stage " + std::to_string(stage);
    Storage::reset_peak_cpu_bytes();
    const int64_t live_before = Storage::live_cpu_bytes();
    MemoryLedger ledger(rank);
    std::shared_ptr<Sequential> mlp = make_ddp_model(adam, sizes, rank);
    psi = mlp->parameter_count();
    std::unique_ptr<DistributedDataParallel> ddp;
    std::unique_ptr<ShardedModel> sharded;
    std::unique_ptr<Optimizer> optimizer;
    int64_t largest = 0;
    if (stage == 0) {
      ddp = std::make_unique<DistributedDataParallel>(
          *mlp, group, ReducerOptions{.gradient_as_bucket_view = true});
      optimizer = make_ddp_optimizer(adam, mlp->parameters());
      // DDP's model state, counted from its buffers: parameters, the buckets (the
      // gradients are views of them) and Adam's two moments.
      ledger.add(MemoryKind::parameters, 4 * psi, "parameters");
      int64_t buckets = 0;
      for (const BucketInfo& b : ddp->reducer().buckets()) buckets += b.bytes;
      ledger.add(MemoryKind::gradients, buckets, "buckets");
      ledger.add(MemoryKind::optimizer, 8 * psi, "Adam");
    } else {
      sharded = std::make_unique<ShardedModel>(mlp, group, ShardingOptions{.stage = stage}, ledger);
      optimizer = make_ddp_optimizer(adam, sharded->shard_parameters());
      largest = sharded->largest_unit();
    }
    Module& model = stage == 0 ? static_cast<Module&>(*mlp) : *sharded;
    GradientSync& sync = stage == 0 ? static_cast<GradientSync&>(*ddp) : *sharded;
    std::vector<double> times, sent;
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      group.barrier();
      const uint64_t before = tcp_bytes_sent();
      const auto start = Clock::now();
      ddp_train_step(model, *optimizer, sync, batch);
      const double seconds = seconds_since(start);
      if (step < o.warmup) continue;
      times.push_back(seconds);
      sent.push_back(static_cast<double>(tcp_bytes_sent() - before) / 4.0);
    }
    row.median = slowest_median(times, group);
    row.values_sent = median(sent);
    row.values_model = modelled_values_sent(stage, psi, world);
    row.ledger_peak = static_cast<double>(ledger.peak_bytes());
    row.model_bytes = modelled_bytes_per_rank(stage, psi, world, 2, largest, 2);
    row.measured = static_cast<double>(Storage::peak_cpu_bytes() - live_before);
    if (sharded) {
      const std::string problem =
          check_identical_across_ranks(sharded->full_state_dict(), group, "after " + row.name);
      if (!problem.empty() && differs.empty()) differs = problem;
    } else {
      const std::string problem = check_identical_across_ranks(*mlp, group, "after DDP");
      if (!problem.empty() && differs.empty()) differs = problem;
    }
    rows.push_back(row);
  }
  if (talk) {
    out << "# lesson 13 --bench: MLP 784 -> " << o.hidden << " x " << o.layers << " -> 10, " << psi
        << " parameters, Adam, batch " << o.batch_size << " per rank, " << world << " rank(s), "
        << group.backend() << ", " << o.steps << " steps per row, median of the slowest rank"
        << std::endl;
    out << "# " << link_header() << std::endl;
    out << "#            mode  state MiB  model MiB  all tensors MiB  Mvalues sent  Mvalues model"
           "  step(ms)  x DDP"
        << std::endl;
    for (const StageRow& row : rows) {
      out << std::setw(17) << row.name << std::fixed << std::setprecision(1) << std::setw(11)
          << row.ledger_peak / (1 << 20) << std::setw(11) << row.model_bytes / (1 << 20)
          << std::setw(17) << row.measured / (1 << 20) << std::setprecision(2) << std::setw(14)
          << row.values_sent / 1e6 << std::setw(15) << row.values_model / 1e6
          << std::setprecision(1) << std::setw(10) << row.median * 1e3 << std::setprecision(2)
          << std::setw(7) << rows[0].median / row.median << std::endl;
    }
    if (group.backend() != "tcp") {
      out << "# values sent count the tcp transport only: " << group.backend()
          << " moves its bytes itself (0 here)" << std::endl;
    }
    if (!o.csv_path.empty()) {
      std::ofstream csv = open_output_file(o.csv_path);
      csv << "mode,ranks,backend,link,state_bytes,model_bytes,all_tensor_bytes,values_sent,"
             "values_model,step_ms,speedup\n";
      for (const StageRow& row : rows) {
        csv << row.name << "," << world << "," << group.backend() << ",\""
            << link_from_env().describe() << "\"," << static_cast<int64_t>(row.ledger_peak) << ","
            << static_cast<int64_t>(row.model_bytes) << "," << static_cast<int64_t>(row.measured)
            << "," << static_cast<int64_t>(row.values_sent) << ","
            << static_cast<int64_t>(row.values_model) << "," << row.median * 1e3 << ","
            << rows[0].median / row.median << "\n";
      }
      out << "# wrote " << o.csv_path << std::endl;
    }
  }
  print_halves_table(group, out, talk);
  if (!differs.empty()) return Verdict::fail(differs);
  return Verdict::pass("every row left identical parameters on every rank");
}

}  // namespace course
