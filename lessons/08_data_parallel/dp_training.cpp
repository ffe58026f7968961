// dp_training.cpp: lesson 08, given: the equivalence check and the training run (see the
// header).
#include "dp_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>

#include "bench_table.h"
#include "clock.h"
#include "data_loader.h"
#include "dp_self_check.h"
#include "ops.h"
#include "optimizer.h"
#include "sequential.h"
#include "step_breakdown.h"
#include "tensor_ops.h"
#include "trainer.h"

namespace course {
namespace {

constexpr double kTargetAccuracy = 0.85;  // lesson 07's
constexpr int kTargetEpochs = 3;

// The largest |a - b| relative to max(1, max |b|).
float relative_diff(const Tensor& a, const Tensor& b) {
  float scale = 1.0f;
  for (float v : b.to_vector()) scale = std::max(scale, std::fabs(v));
  return max_abs_diff(a, b) / scale;
}

}  // namespace

ModuleFactory mlp_replica_factory(const std::vector<int64_t>& sizes) {
  return [sizes] {
    Rng rng(0);  // any values: replicate() overwrites them every step
    return std::static_pointer_cast<Module>(make_mlp(sizes, rng));
  };
}

std::string check_dp_equivalence(const DpOptions& o, const TrainingData& d, int devices,
                                 std::ostream& out) {
  Rng a(o.seed + 7), b(o.seed + 7);
  auto master = make_mlp(d.sizes, a);
  auto serial = make_mlp(d.sizes, b);
  DataParallel dp(master, mlp_replica_factory(d.sizes), devices);
  const SgdOptions sgd{.lr = o.lr, .momentum = o.momentum};
  Sgd dp_opt(dp.parameters(), sgd), serial_opt(serial->parameters(), sgd);
  // Batches that do not divide by the devices: B = batch + 1, + 2, ...
  DataLoader loader(d.train, o.batch_size + 1,
                    std::make_shared<RandomSampler>(d.train.size(), o.seed + 3));
  float worst = 0;
  for (int step = 0; step < kDpCheckSteps; ++step) {
    std::optional<Batch> batch = loader.next();
    if (!batch) break;
    dp_opt.zero_grad();
    serial_opt.zero_grad();
    const Variable y = dp.forward(Variable(batch->inputs));
    const Variable z = serial->forward(Variable(batch->inputs));
    float diff = relative_diff(y.data(), z.data());
    if (diff > kDpTolerance) {
      return "step " + std::to_string(step) + ": the output differs from the serial model's by " +
             std::to_string(diff) + " (relative), above " + std::to_string(kDpTolerance);
    }
    worst = std::max(worst, diff);
    cross_entropy(y, batch->targets).backward();
    cross_entropy(z, batch->targets).backward();
    const auto p = master->named_parameters(), q = serial->named_parameters();
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].second.grad().defined()) {
        return "step " + std::to_string(step) + ": \"" + p[i].first +
               "\" of the master has no gradient after backward";
      }
      diff = relative_diff(p[i].second.grad(), q[i].second.grad());
      if (diff > kDpTolerance) {
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
    if (diff > kDpTolerance) {
      return "after " + std::to_string(kDpCheckSteps) + " SGD steps \"" + p[i].first +
             "\" differs from the serial model's by " + std::to_string(diff) + " (relative)";
    }
    worst = std::max(worst, diff);
  }
  out << "equivalence: " << kDpCheckSteps << " SGD steps at batch " << o.batch_size + 1 << " over "
      << devices
      << " devices: output, every gradient and every parameter equal the serial model's "
         "(largest relative difference "
      << worst << ")" << std::endl;
  return "";
}

Verdict run_dp_training(const DpOptions& o, int devices, std::ostream& out) {
  // First the cases an even batch on healthy replicas cannot see (dp_self_check.h).
  const std::string wrong = self_check_data_parallel();
  if (!wrong.empty()) return Verdict::fail("self-check: " + wrong);
  out << kDataParallelSelfCheckPassed << "\n";
  const TrainingData d = load_training_data(o.data, o.limit, o.hidden);
  out << "data: " << d.train.size() << " training and " << d.test.size() << " test examples from "
      << o.data << "\n";
  const std::string problem = check_dp_equivalence(o, d, devices, out);
  if (!problem.empty()) {
    return Verdict::fail("DataParallel over " + std::to_string(devices) + " devices: " + problem);
  }

  Rng rng(o.seed);
  auto master = make_mlp(d.sizes, rng);
  DataParallel dp(master, mlp_replica_factory(d.sizes), devices);
  Sgd optimizer(dp.parameters(), {.lr = o.lr, .momentum = o.momentum});
  out << "training: DataParallel over " << devices << " devices, an MLP of "
      << master->parameter_count() << " parameters, SGD, batch " << o.batch_size << ", " << o.epochs
      << " epoch(s), one BLAS thread per device" << std::endl;
  DataLoader train_loader(d.train, o.batch_size,
                          std::make_shared<RandomSampler>(d.train.size(), o.seed));
  DataLoader test_loader(d.test, 1000, std::make_shared<SequentialSampler>(d.test.size()));
  double best = 0;
  int best_epoch = 0;
  double samples_per_s = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    StepBreakdown b(devices);
    double loss_sum = 0;
    int64_t correct = 0, samples = 0;
    const auto start = std::chrono::steady_clock::now();
    train_loader.start_epoch(epoch);
    while (std::optional<Batch> batch = train_loader.next()) {
      const StepResult r = timed_train_step(dp, optimizer, *batch, b);
      const int64_t n = batch->targets.numel();
      loss_sum += static_cast<double>(r.loss) * n;
      correct += r.correct;
      samples += n;
    }
    const double seconds = seconds_since(start);
    const EvalStats e = evaluate(dp, test_loader);
    samples_per_s = samples / seconds;
    if (epoch < kTargetEpochs && e.accuracy > best) {
      best = e.accuracy;
      best_epoch = epoch + 1;
    }
    out << "epoch " << epoch + 1 << "/" << o.epochs << "  loss "
        << format_fixed(loss_sum / samples, 4) << "  train "
        << format_fixed(100.0 * correct / samples, 2) << "%  test "
        << format_fixed(100 * e.accuracy, 2) << "%  " << format_fixed(samples_per_s, 0)
        << " samples/s  " << format_fixed(seconds, 1) << " s\n";
    out << breakdown_lines(b, "  ") << std::flush;
  }
  std::ostringstream summary;
  summary << format_fixed(100 * best, 2) << "% test accuracy at epoch " << best_epoch << " over "
          << devices << " devices, " << format_fixed(samples_per_s, 0)
          << " samples/s, equal to the serial model within " << kDpTolerance;
  if (best < kTargetAccuracy) {
    return Verdict::fail("test accuracy " + format_fixed(100 * best, 2) + "% within " +
                         std::to_string(std::min(o.epochs, kTargetEpochs)) +
                         " epoch(s), below the target of " +
                         format_fixed(100 * kTargetAccuracy, 0) + "% (" + summary.str() + ")");
  }
  return Verdict::pass(summary.str());
}

}  // namespace course
