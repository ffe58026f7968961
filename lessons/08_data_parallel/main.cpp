// main.cpp: ./lesson08, lesson 07's MLP trained through DataParallel, with worker threads
// as the devices, and where each step's time goes.
//
//   make lesson08 && ./lesson08                   # all cores as devices, 3 epochs, batch 128
//   ./lesson08 --devices 2 --batch-size 512
//   ./lesson08 --bench                            # one thread vs DataParallel over 1, 2, ...
//
// Self-check: first the equivalence, on a few real batches: DataParallel's output, every
// gradient, and the parameters after SGD steps equal those of the same model run serially
// on the whole batch (within a float tolerance). Then training: per epoch, accuracy,
// samples/s and the step's breakdown: replicate, scatter, forward per device, gather +
// loss, backward per device, reduce-add, optimizer, how much of the step device 0 runs
// alone (serial) and how much device time sits idle. PASS needs the equivalence and the
// test accuracy target of lesson 07 (>= 85% within 3 epochs).
//
// Devices are threads with one BLAS thread each; device 0 is this thread.
#include <cblas.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_table.h"
#include "data_loader.h"
#include "data_parallel.h"
#include "data_parallel_times.h"
#include "device_pool.h"
#include "dp_self_check.h"
#include "driver.h"
#include "mnist.h"
#include "ops.h"
#include "optimizer.h"
#include "sequential.h"
#include "step_breakdown.h"
#include "tensor_ops.h"
#include "trainer.h"
#include "training_data.h"

namespace {

using Clock = std::chrono::steady_clock;
using course::format_fixed;
using course::seconds_since;

struct Options {
  std::string data = course::kFashionMnistDir;
  int devices = 0;  // 0: one per core
  int epochs = 3;
  int64_t batch_size = 128;
  float lr = 0.05f;
  float momentum = 0.9f;
  std::vector<int64_t> hidden = {512, 512};
  uint64_t seed = 0;
  int64_t limit = 0;
  double bench_seconds = 1.5;  // per configuration
};

constexpr double kTargetAccuracy = 0.85;
constexpr int kTargetEpochs = 3;
constexpr float kTolerance = 1e-4f;  // relative: float sums in another order
constexpr int kCheckSteps = 3;

// ---- Data and model ----------------------------------------------------------------------

using Data = course::TrainingData;

Data load(const Options& o) {
  return course::load_training_data(o.data, o.limit, o.hidden);
}

course::ModuleFactory replica_factory(const std::vector<int64_t>& sizes) {
  return [sizes] {
    course::Rng rng(0);  // any values: replicate() overwrites them every step
    return std::static_pointer_cast<course::Module>(course::make_mlp(sizes, rng));
  };
}

// ---- The equivalence check ---------------------------------------------------------------

// The largest |a - b| relative to max(1, max |b|).
float relative_diff(const course::Tensor& a, const course::Tensor& b) {
  float scale = 1.0f;
  for (float v : b.to_vector()) scale = std::max(scale, std::fabs(v));
  return course::max_abs_diff(a, b) / scale;
}

// DataParallel against the same model on the whole batch, for kCheckSteps SGD steps.
std::string check_equivalence(const Options& o, const Data& d, int devices) {
  course::Rng a(o.seed + 7), b(o.seed + 7);
  auto master = course::make_mlp(d.sizes, a);
  auto serial = course::make_mlp(d.sizes, b);
  course::DataParallel dp(master, replica_factory(d.sizes), devices);
  const course::SgdOptions sgd{.lr = o.lr, .momentum = o.momentum};
  course::Sgd dp_opt(dp.parameters(), sgd), serial_opt(serial->parameters(), sgd);
  // Batches that do not divide by the devices: B = batch + 1, + 2, ...
  course::DataLoader loader(d.train, o.batch_size + 1,
                            std::make_shared<course::RandomSampler>(d.train.size(), o.seed + 3));
  float worst = 0;
  for (int step = 0; step < kCheckSteps; ++step) {
    std::optional<course::Batch> batch = loader.next();
    if (!batch) break;
    dp_opt.zero_grad();
    serial_opt.zero_grad();
    const course::Variable y = dp.forward(course::Variable(batch->inputs));
    const course::Variable z = serial->forward(course::Variable(batch->inputs));
    float diff = relative_diff(y.data(), z.data());
    if (diff > kTolerance) {
      return "step " + std::to_string(step) + ": the output differs from the serial model's by " +
             std::to_string(diff) + " (relative), above " + std::to_string(kTolerance);
    }
    worst = std::max(worst, diff);
    course::cross_entropy(y, batch->targets).backward();
    course::cross_entropy(z, batch->targets).backward();
    const auto p = master->named_parameters(), q = serial->named_parameters();
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].second.grad().defined()) {
        return "step " + std::to_string(step) + ": \"" + p[i].first +
               "\" of the master has no gradient after backward";
      }
      diff = relative_diff(p[i].second.grad(), q[i].second.grad());
      if (diff > kTolerance) {
        return "step " + std::to_string(step) + ": the gradient of \"" + p[i].first +
               "\" differs from the serial model's by " + std::to_string(diff) + " (relative)";
      }
      worst = std::max(worst, diff);
    }
    dp_opt.step();
    serial_opt.step();
  }
  const auto p = master->named_parameters(), q = serial->named_parameters();
  for (size_t i = 0; i < p.size(); ++i) {
    const float diff = relative_diff(p[i].second.data(), q[i].second.data());
    if (diff > kTolerance) {
      return "after " + std::to_string(kCheckSteps) + " SGD steps \"" + p[i].first +
             "\" differs from the serial model's by " + std::to_string(diff) + " (relative)";
    }
    worst = std::max(worst, diff);
  }
  std::cout << "equivalence: " << kCheckSteps << " SGD steps at batch " << o.batch_size + 1
            << " over " << devices
            << " devices: output, every gradient and every parameter equal the serial model's "
               "(largest relative difference "
            << worst << ")" << std::endl;
  return "";
}

// ---- Training ----------------------------------------------------------------------------

course::Verdict train(const Options& o, int devices) {
  // First the cases an even batch on healthy replicas cannot see (dp_self_check.h).
  const std::string wrong = course::self_check_data_parallel();
  if (!wrong.empty()) return course::Verdict::fail("self-check: " + wrong);
  std::cout << course::kDataParallelSelfCheckPassed << "\n";
  const Data d = load(o);
  std::cout << "data: " << d.train.size() << " training and " << d.test.size()
            << " test examples from " << o.data << "\n";
  const std::string problem = check_equivalence(o, d, devices);
  if (!problem.empty())
    return course::Verdict::fail("DataParallel over " + std::to_string(devices) +
                                 " devices: " + problem);

  course::Rng rng(o.seed);
  auto master = course::make_mlp(d.sizes, rng);
  course::DataParallel dp(master, replica_factory(d.sizes), devices);
  course::Sgd optimizer(dp.parameters(), {.lr = o.lr, .momentum = o.momentum});
  std::cout << "training: DataParallel over " << devices << " devices, an MLP of "
            << master->parameter_count() << " parameters, SGD, batch " << o.batch_size << ", "
            << o.epochs << " epoch(s), one BLAS thread per device" << std::endl;
  course::DataLoader train_loader(d.train, o.batch_size,
                                  std::make_shared<course::RandomSampler>(d.train.size(), o.seed));
  course::DataLoader test_loader(d.test, 1000,
                                 std::make_shared<course::SequentialSampler>(d.test.size()));
  double best = 0;
  int best_epoch = 0;
  double samples_per_s = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    course::StepBreakdown b(devices);
    double loss_sum = 0;
    int64_t correct = 0, samples = 0;
    const auto start = Clock::now();
    train_loader.start_epoch(epoch);
    while (std::optional<course::Batch> batch = train_loader.next()) {
      const course::StepResult r = course::timed_train_step(dp, optimizer, *batch, b);
      const int64_t n = batch->targets.numel();
      loss_sum += static_cast<double>(r.loss) * n;
      correct += r.correct;
      samples += n;
    }
    const double seconds = seconds_since(start);
    const course::EvalStats e = course::evaluate(dp, test_loader);
    samples_per_s = samples / seconds;
    if (epoch < kTargetEpochs && e.accuracy > best) {
      best = e.accuracy;
      best_epoch = epoch + 1;
    }
    std::cout << "epoch " << epoch + 1 << "/" << o.epochs << "  loss "
              << format_fixed(loss_sum / samples, 4) << "  train "
              << format_fixed(100.0 * correct / samples, 2) << "%  test "
              << format_fixed(100 * e.accuracy, 2) << "%  " << format_fixed(samples_per_s, 0)
              << " samples/s  " << format_fixed(seconds, 1) << " s\n";
    std::cout << course::breakdown_lines(b, "  ") << std::flush;
  }
  std::ostringstream summary;
  summary << format_fixed(100 * best, 2) << "% test accuracy at epoch " << best_epoch << " over "
          << devices << " devices, " << format_fixed(samples_per_s, 0)
          << " samples/s, equal to the serial model within " << kTolerance;
  if (best < kTargetAccuracy) {
    return course::Verdict::fail(
        "test accuracy " + format_fixed(100 * best, 2) + "% within " +
        std::to_string(std::min(o.epochs, kTargetEpochs)) + " epoch(s), below the target of " +
        format_fixed(100 * kTargetAccuracy, 0) + "% (" + summary.str() + ")");
  }
  return course::Verdict::pass(summary.str());
}

// ---- The benchmark -----------------------------------------------------------------------

// The mean time of pool.run() with k empty tasks: waking k sleeping threads and waiting
// for them, the fixed price of every parallel phase (two per step). Microseconds on an idle
// machine; up to milliseconds when other programs keep every core busy and a woken thread
// has to wait for one (the mean, not the median, is what a step pays).
double pool_round_trip_seconds(int k) {
  course::DevicePool pool(k);
  const std::vector<std::function<void()>> tasks(k, [] {});
  const int runs = 200;
  const auto start = Clock::now();
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
Rate measure(course::DataLoader& loader, double seconds, Step step) {
  loader.start_epoch(0);
  auto next = [&] {
    std::optional<course::Batch> b = loader.next();
    if (!b) {
      loader.start_epoch(1);
      b = loader.next();
    }
    return *b;
  };
  for (int i = 0; i < 2; ++i) step(next());
  int64_t samples = 0;
  const double cpu_start = process_cpu_seconds();
  const auto start = Clock::now();
  while (seconds_since(start) < seconds || samples == 0) {
    const course::Batch b = next();
    step(b);
    samples += b.targets.numel();
  }
  const double wall = seconds_since(start);
  return {samples / wall, (process_cpu_seconds() - cpu_start) / wall};
}

course::Verdict bench(const Options& o, int max_devices) {
  Options small = o;
  const Data d = load(small);
  std::cout << "bench: " << d.train.size() << " Fashion-MNIST examples, MLP " << d.sizes.front();
  for (size_t i = 1; i < d.sizes.size(); ++i) std::cout << "-" << d.sizes[i];
  std::cout << ", SGD; about " << o.bench_seconds << " s per row; " << max_devices
            << " devices = " << max_devices << " threads with one BLAS thread each; "
            << std::thread::hardware_concurrency() << " cores\n"
            << "Amdahl: speedup over DataParallel on 1 device allowed by the serial share s1 "
               "measured there, 1 / (s1 + (1 - s1) / K)\n";
  for (const int64_t batch : {int64_t{128}, int64_t{512}}) {
    course::DataLoader loader(d.train, batch,
                              std::make_shared<course::RandomSampler>(d.train.size(), o.seed),
                              /*drop_last=*/true);
    course::Rng rng(o.seed);
    auto plain = course::make_mlp(d.sizes, rng);
    course::Sgd plain_opt(plain->parameters(), {.lr = o.lr, .momentum = o.momentum});
    const Rate one = measure(loader, o.bench_seconds, [&](const course::Batch& b) {
      course::train_step(*plain, plain_opt, b);
    });
    const double one_thread = one.samples_per_s;
    std::cout << "\nbatch " << batch << "\n"
              << "| run | samples/s | vs one thread | vs DP 1 | Amdahl bound | replicate ms | "
                 "scatter ms | forward ms | gather+loss ms | backward ms | reduce-add ms | "
                 "optimizer ms | serial share | idle | pool round trip | cores used |\n"
              << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                 "---: | ---: | ---: | ---: | ---: |\n"
              << "| one thread | " << format_fixed(one_thread, 0)
              << " | 1.00 | | | | | | | | | | | | | " << format_fixed(one.cores, 2) << " |\n";
    double dp1 = 0, s1 = 0;
    for (int k = 1; k <= max_devices; ++k) {
      course::Rng r(o.seed);
      auto master = course::make_mlp(d.sizes, r);
      course::DataParallel dp(master, replica_factory(d.sizes), k);
      course::Sgd opt(dp.parameters(), {.lr = o.lr, .momentum = o.momentum});
      course::StepBreakdown b(k);
      bool measuring = false;
      const Rate measured = measure(loader, o.bench_seconds, [&](const course::Batch& x) {
        course::StepBreakdown warm(k);
        course::timed_train_step(dp, opt, x, measuring ? b : warm);
        measuring = true;  // after the first warm-up step
      });
      const double rate = measured.samples_per_s;
      if (k == 1) {
        dp1 = rate;
        s1 = b.serial_share();
      }
      const double amdahl = 1.0 / (s1 + (1.0 - s1) / k);
      std::cout << "| DataParallel, " << k << (k == 1 ? " device" : " devices") << " | "
                << format_fixed(rate, 0) << " | " << format_fixed(rate / one_thread, 2) << " | "
                << format_fixed(rate / dp1, 2) << " | " << format_fixed(amdahl, 2) << " | "
                << format_fixed(b.ms(b.replicate), 2) << " | " << format_fixed(b.ms(b.scatter), 3)
                << " | " << format_fixed(b.ms(b.forward), 1) << " | "
                << format_fixed(b.ms(b.gather_loss), 2) << " | "
                << format_fixed(b.ms(b.backward), 1) << " | " << format_fixed(b.ms(b.reduce_add), 2)
                << " | " << format_fixed(b.ms(b.optimizer), 2) << " | "
                << format_fixed(100 * b.serial_share(), 1) << "% | "
                << format_fixed(100 * b.idle_share(), 1) << "% | "
                << format_fixed(1e6 * pool_round_trip_seconds(k), 0) << " us | "
                << format_fixed(measured.cores, 2) << " |" << std::endl;
    }
  }
  std::cout << "\n(ratios are to the one-thread row of the same batch size, measured in this run. "
               "\"cores used\" is this process's CPU time over the row's wall time: K devices "
               "can only be K times faster when it can reach K; on a machine that other "
               "programs load it cannot, and rows differ from run to run)\n";
  return course::Verdict::pass("benchmark printed");
}

course::Verdict run(const Options& o, bool bench_mode) {
  openblas_set_num_threads(1);  // one BLAS thread per device
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int devices = o.devices > 0 ? o.devices : cores;
  if (bench_mode) return bench(o, o.devices > 0 ? o.devices : std::max(2, cores));
  return train(o, devices);
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson08";
  config.title = "DataParallel: replicate, scatter, parallel_apply, gather, on threads";
  config.distributed = false;
  config.has_bench = true;
  Options o;
  return course::run_driver(
      argc, argv, config,
      [&](CLI::App& app) {
        app.add_option("--data", o.data, "directory with the MNIST-format IDX files")
            ->capture_default_str();
        app.add_option("--devices", o.devices, "devices (threads); 0: one per core")
            ->check(CLI::Range(0, 64))
            ->capture_default_str();
        app.add_option("--epochs", o.epochs, "passes over the training set")
            ->check(CLI::Range(1, 1000))
            ->capture_default_str();
        app.add_option("--batch-size", o.batch_size, "examples per step (the global batch)")
            ->check(CLI::Range(1, 60000))
            ->capture_default_str();
        app.add_option("--lr", o.lr, "SGD learning rate")->capture_default_str();
        app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
        app.add_option("--hidden", o.hidden, "hidden layer sizes")->expected(1, 16);
        app.add_option("--seed", o.seed, "seed for initialisation and shuffling")
            ->capture_default_str();
        app.add_option("--limit", o.limit, "train on the first N examples only (0: all)");
        app.add_option("--bench-seconds", o.bench_seconds, "seconds per benchmark row")
            ->capture_default_str();
      },
      [&](course::DriverContext& ctx) { return run(o, ctx.args().bench); });
}
