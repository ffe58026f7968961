// dp_bench.cpp: lesson 08, given: one thread against DataParallel (see the header).
#include "dp_bench.h"

#include <sys/resource.h>

#include <chrono>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "bench_table.h"
#include "clock.h"
#include "data_loader.h"
#include "device_pool.h"
#include "optimizer.h"
#include "sequential.h"
#include "step_breakdown.h"
#include "trainer.h"

namespace course {
namespace {

// The mean time of pool.run() with k empty tasks: waking k sleeping threads and waiting
// for them, the fixed price of every parallel phase (two per step). Microseconds on an idle
// machine; up to milliseconds when other programs keep every core busy and a woken thread
// has to wait for one (the mean, not the median, is what a step pays).
double pool_round_trip_seconds(int k) {
  DevicePool pool(k);
  const std::vector<std::function<void()>> tasks(k, [] {});
  const int runs = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) pool.run(tasks);
  return seconds_since(start) / runs;
}

// This process's CPU time so far (every thread, user and system).
double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Rate {
  double samples_per_s = 0;
  double cores = 0;  // CPU time / wall time: how many cores the run actually got
};

// Runs steps on consecutive batches for about `seconds` (after two warm-up steps).
template <typename Step>
Rate measure(DataLoader& loader, double seconds, Step step) {
  loader.start_epoch(0);
  auto next = [&] {
    std::optional<Batch> b = loader.next();
    if (!b) {
      loader.start_epoch(1);
      b = loader.next();
    }
    return *b;
  };
  for (int i = 0; i < 2; ++i) step(next());
  int64_t samples = 0;
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  while (seconds_since(start) < seconds || samples == 0) {
    const Batch b = next();
    step(b);
    samples += b.targets.numel();
  }
  const double wall = seconds_since(start);
  return {samples / wall, (process_cpu_seconds() - cpu_start) / wall};
}

// The Markdown table's columns; the CSV has a "batch" column first.
const std::vector<const char*> kColumns = {
    "run",          "samples/s",  "vs one thread",   "vs DP 1",     "Amdahl bound",  "replicate ms",
    "scatter ms",   "forward ms", "gather+loss ms",  "backward ms", "reduce-add ms", "optimizer ms",
    "serial share", "idle",       "pool round trip", "cores used"};

// Prints `cells` but the first (the batch) as a Markdown row and keeps them all in `table`.
void add_markdown_row(BenchTable& table, std::vector<std::string> cells, std::ostream& out) {
  out << "|";
  for (size_t i = 1; i < cells.size(); ++i) out << " " << cells[i] << " |";
  out << std::endl;
  table.add_row(std::move(cells));
}

BenchTable csv_table() {
  std::vector<BenchTable::Column> columns{{"batch", 5}};
  for (const char* name : kColumns) columns.push_back({name, 10});
  return BenchTable(std::move(columns));
}

}  // namespace

Verdict run_dp_bench(const DpOptions& o, int max_devices, const std::string& csv_path,
                     std::ostream& out) {
  BenchTable table = csv_table();
  const TrainingData d = load_training_data(o.data, o.limit, o.hidden);
  out << "bench: " << d.train.size() << " Fashion-MNIST examples, MLP " << d.sizes.front();
  for (size_t i = 1; i < d.sizes.size(); ++i) out << "-" << d.sizes[i];
  out << ", SGD; about " << o.bench_seconds << " s per row; " << max_devices
      << " devices = " << max_devices << " threads with one BLAS thread each; "
      << std::thread::hardware_concurrency() << " cores\n"
      << "Amdahl: speedup over DataParallel on 1 device allowed by the serial share s1 "
         "measured there, 1 / (s1 + (1 - s1) / K)\n";
  for (const int64_t batch : {int64_t{128}, int64_t{512}}) {
    DataLoader loader(d.train, batch, std::make_shared<RandomSampler>(d.train.size(), o.seed),
                      /*drop_last=*/true);
    Rng rng(o.seed);
    auto plain = make_mlp(d.sizes, rng);
    Sgd plain_opt(plain->parameters(), {.lr = o.lr, .momentum = o.momentum});
    const Rate one =
        measure(loader, o.bench_seconds, [&](const Batch& b) { train_step(*plain, plain_opt, b); });
    const double one_thread = one.samples_per_s;
    out << "\nbatch " << batch << "\n|";
    for (const char* name : kColumns) out << " " << name << " |";
    out << "\n| --- |";
    for (size_t i = 1; i < kColumns.size(); ++i) out << " ---: |";
    out << "\n" << std::flush;
    std::vector<std::string> first(kColumns.size() + 1);
    first[0] = std::to_string(batch);
    first[1] = "one thread";
    first[2] = format_fixed(one_thread, 0);
    first[3] = "1.00";
    first.back() = format_fixed(one.cores, 2);
    add_markdown_row(table, std::move(first), out);
    double dp1 = 0, s1 = 0;
    for (int k = 1; k <= max_devices; ++k) {
      Rng r(o.seed);
      auto master = make_mlp(d.sizes, r);
      DataParallel dp(master, mlp_replica_factory(d.sizes), k);
      Sgd opt(dp.parameters(), {.lr = o.lr, .momentum = o.momentum});
      StepBreakdown b(k);
      bool measuring = false;
      const Rate measured = measure(loader, o.bench_seconds, [&](const Batch& x) {
        StepBreakdown warm(k);
        timed_train_step(dp, opt, x, measuring ? b : warm);
        measuring = true;  // after the first warm-up step
      });
      const double rate = measured.samples_per_s;
      if (k == 1) {
        dp1 = rate;
        s1 = b.serial_share();
      }
      const double amdahl = 1.0 / (s1 + (1.0 - s1) / k);
      add_markdown_row(
          table,
          {std::to_string(batch),
           "DataParallel, " + std::to_string(k) + (k == 1 ? " device" : " devices"),
           format_fixed(rate, 0), format_fixed(rate / one_thread, 2), format_fixed(rate / dp1, 2),
           format_fixed(amdahl, 2), format_fixed(b.ms(b.replicate), 2),
           format_fixed(b.ms(b.scatter), 3), format_fixed(b.ms(b.forward), 1),
           format_fixed(b.ms(b.gather_loss), 2), format_fixed(b.ms(b.backward), 1),
           format_fixed(b.ms(b.reduce_add), 2), format_fixed(b.ms(b.optimizer), 2),
           format_fixed(100 * b.serial_share(), 1) + "%",
           format_fixed(100 * b.idle_share(), 1) + "%",
           format_fixed(1e6 * pool_round_trip_seconds(k), 0) + " us",
           format_fixed(measured.cores, 2)},
          out);
    }
  }
  out << "\n(ratios are to the one-thread row of the same batch size, measured in this run. "
         "\"cores used\" is this process's CPU time over the row's wall time: K devices "
         "can only be K times faster when it can reach K; on a machine that other "
         "programs load it cannot, and rows differ from run to run)\n";
  table.write_csv(csv_path);
  return Verdict::pass("benchmark printed; the rows also in " + csv_path);
}

}  // namespace course
