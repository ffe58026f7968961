// capstone_bench.cpp: lesson 11's throughput benchmark (given; see capstone_bench.h).
#include "capstone_bench.h"

#include <chrono>
#include <cstdio>

#include "bench_table.h"
#include "bn_mlp.h"
#include "clock.h"
#include "distributed_data_parallel.h"
#include "distributed_sampler.h"
#include "sync_batch_norm.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

// One process: gradients stay local.
class LocalGradients : public GradientSync {
 public:
  void finish_backward() override {}
  int64_t messages_per_step() const override { return 0; }
  std::string describe() const override { return "one process, no communication"; }
};

// Runs warm-up + `steps` steps from `loader`; returns the seconds of the timed steps.
double time_steps(Module& model, Optimizer& opt, GradientSync& sync, DataLoader& loader,
                  int steps) {
  int64_t epoch = 0;
  loader.start_epoch(epoch);
  auto next = [&] {
    std::optional<Batch> b = loader.next();
    if (!b) {
      loader.start_epoch(++epoch);
      b = loader.next();
    }
    return *b;
  };
  for (int s = 0; s < 5; ++s) ddp_train_step(model, opt, sync, next());
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) ddp_train_step(model, opt, sync, next());
  return seconds_since(start);
}

}  // namespace

Verdict run_capstone_bench(const CapstoneOptions& o, const CapstoneBenchOptions& bench,
                           ProcessGroup& pg, ProcessGroup& bn_group, std::ostream& out) {
  const int world = pg.size(), rank = pg.rank();
  const DdpTrainingOptions& t = o.train;
  const DdpData data = prepare_data_cached(t, o.run_dir + "/prepared-data.safetensors", pg);
  const double batch = static_cast<double>(t.batch_size);

  // Phase 1: rank 0 alone.
  std::vector<float> alone{0};
  if (rank == 0) {
    Rng rng(t.seed);
    auto model = make_bn_mlp(data.sizes, rng);
    auto opt = make_ddp_optimizer(t, model->parameters());
    LocalGradients local;
    DataLoader loader(data.train, t.batch_size,
                      std::make_shared<DistributedSampler>(data.train.size(), 1, 0, true, t.seed),
                      true);
    alone[0] = static_cast<float>(time_steps(*model, *opt, local, loader, bench.steps));
  }
  pg.barrier();
  pg.broadcast(alone, 0);

  // Phase 2: every rank, DDP.
  Rng rng(t.seed + static_cast<uint64_t>(rank));
  std::shared_ptr<LayerStack> model = make_bn_mlp(data.sizes, rng);
  if (o.sync_bn) model = convert_sync_batchnorm(*model, bn_group);
  broadcast_buffers(*model, pg);
  DistributedDataParallel ddp(*model, pg);
  auto opt = make_ddp_optimizer(t, model->parameters());
  DataLoader loader(
      data.train, t.batch_size,
      std::make_shared<DistributedSampler>(data.train.size(), world, rank, true, t.seed), true);
  std::vector<float> together{
      static_cast<float>(time_steps(*model, *opt, ddp, loader, bench.steps))};
  pg.all_reduce(together, ReduceOp::MAX);

  const double one = bench.steps * batch / alone[0];
  const double many = world * bench.steps * batch / together[0];
  if (rank == 0) {
    out << "benchmark: " << bench.steps << " steps, batch " << t.batch_size << " per rank, "
        << (o.sync_bn ? "SyncBatchNorm" : "BatchNorm1d per rank") << "\n";
    BenchTable table({{"ranks", 6}, {"samples/s", 10}, {"vs one process", 15}});
    table.print_header(out);
    table.add_row({"1", format_fixed(one, 0), format_fixed(1.0, 2)}, &out);
    table.add_row({std::to_string(world), format_fixed(many, 0), format_fixed(many / one, 2)},
                  &out);
    table.write_csv(bench.csv_path);
  }
  char line[256];
  std::snprintf(line, sizeof(line), "%d rank(s): %.0f samples/s, %.2fx one process (%.0f)", world,
                many, many / one, one);
  return Verdict::pass(line);
}

}  // namespace course
