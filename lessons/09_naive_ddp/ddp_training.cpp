// ddp_training.cpp: lesson 09, the given data-parallel training loop (see ddp_training.h).
#include "ddp_training.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

#include "bench_table.h"
#include "checkpoint.h"
#include "clock.h"
#include "distributed_sampler.h"
#include "epoch_loop.h"
#include "error.h"
#include "flag_agreement.h"
#include "ops.h"
#include "sync_check.h"
#include "tensor_ops.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<float> flatten(const NamedTensors& state) {
  std::vector<float> flat;
  for (const auto& [name, t] : state) {
    const std::vector<float> v = t.to_vector();
    flat.insert(flat.end(), v.begin(), v.end());
  }
  return flat;
}

}  // namespace

DdpData load_ddp_data(const DdpTrainingOptions& o) {
  return load_training_data(o.data, o.limit, o.hidden);
}

std::shared_ptr<Sequential> make_ddp_model(const DdpTrainingOptions& o,
                                           const std::vector<int64_t>& sizes, int rank) {
  Rng rng(o.seed + static_cast<uint64_t>(rank));
  std::shared_ptr<Sequential> model = make_mlp(sizes, rng);
  if (rank == 0 && !o.init.empty()) load_checkpoint(o.init, *model, nullptr);
  move_module_to(*model, parse_device(o.device));
  return model;
}

std::unique_ptr<Optimizer> make_ddp_optimizer(const DdpTrainingOptions& o,
                                              std::vector<Variable> params) {
  return make_optimizer(o, std::move(params));
}

StepResult ddp_train_step(Module& model, Optimizer& optimizer, GradientSync& sync,
                          const Batch& batch, DdpStepTimes* times) {
  const auto start = Clock::now();
  optimizer.zero_grad();
  const Variable logits = model.forward(Variable(batch.inputs));
  const Variable loss = cross_entropy(logits, batch.targets);
  auto t = Clock::now();
  sync.prepare_for_backward();
  double sync_seconds = seconds_since(t);
  loss.backward();
  t = Clock::now();
  sync.finish_backward();
  sync_seconds += seconds_since(t);
  optimizer.step();
  StepResult result;
  result.loss = loss.item();
  result.correct = count_correct(logits.data(), batch.targets);
  if (times != nullptr) {
    times->sync = sync_seconds;
    if (const std::optional<InBackwardSync> inside = sync.in_backward_sync()) {
      times->in_backward = *inside;
      times->has_in_backward = true;
    }
    times->compute = seconds_since(start) - times->all_sync();
  }
  return result;
}

void DdpStepTimes::add(const DdpStepTimes& other) {
  compute += other.compute;
  sync += other.sync;
  in_backward.hooks += other.in_backward.hooks;
  in_backward.wait += other.in_backward.wait;
  in_backward.copy_back += other.in_backward.copy_back;
  has_in_backward = has_in_backward || other.has_in_backward;
}

std::string describe_sync_share(const DdpStepTimes& t) {
  const double total = std::max(t.compute + t.all_sync(), 1e-12);
  const auto share = [&](double seconds) { return format_fixed(100 * seconds / total, 1) + "%"; };
  std::string line = "gradient sync " + share(t.all_sync());
  if (t.has_in_backward) {
    line += " (after backward " + share(t.sync) + ", in backward: hooks " +
            share(t.in_backward.hooks) + ", exposed wait " + share(t.in_backward.wait) +
            ", copy back " + share(t.in_backward.copy_back) + ")";
  }
  return line;
}

std::map<std::string, std::string> ddp_training_flag_values(const DdpTrainingOptions& o) {
  auto number = [](double x) {
    std::ostringstream s;
    s.precision(7);  // a float's digits: --lr 0.1 reads 0.1
    s << x;
    return s.str();
  };
  std::string hidden;
  for (int64_t h : o.hidden) hidden += (hidden.empty() ? "" : " ") + std::to_string(h);
  return {{"--epochs", std::to_string(o.epochs)},
          {"--batch-size", std::to_string(o.batch_size)},
          {"--optimizer", o.optimizer},
          {"--lr", number(learning_rate(o))},  // the rate used: the default and 0.05 agree
          {"--momentum", number(o.momentum)},
          {"--weight-decay", number(o.weight_decay)},
          {"--device", o.device},
          {"--hidden", hidden},
          {"--seed", std::to_string(o.seed)},
          {"--limit", std::to_string(o.limit)},
          {"--no-shuffle", o.shuffle ? "off" : "on"},
          {"--detect-anomaly", o.detect_anomaly ? "on" : "off"}};
}

void check_finite_step(const Module& model, float loss, bool detect_anomaly, int rank, int epoch,
                       int64_t step) {
  const std::string where = " at step " + std::to_string(step) + " (epoch " +
                            std::to_string(epoch + 1) + ") on rank " + std::to_string(rank);
  const std::string advice =
      ": training stopped at the first non-finite value. Lower --lr, check the data and "
      "--init";
  if (!std::isfinite(loss)) {
    throw Error("the loss is " + std::string(std::isnan(loss) ? "nan" : "inf") + where + advice +
                (detect_anomaly ? "" : "; --detect-anomaly names the first non-finite gradient"));
  }
  if (!detect_anomaly) return;
  for (const auto& [name, p] : model.named_parameters()) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const std::vector<float> v = g.to_vector();
    for (size_t k = 0; k < v.size(); ++k) {
      if (!std::isfinite(v[k])) {
        throw Error("the gradient of '" + name + "' holds " + (std::isnan(v[k]) ? "nan" : "inf") +
                    " at element " + std::to_string(k) + where + advice);
      }
    }
  }
}

Batch global_batch(const Dataset& data, int world, int64_t batch_per_rank, bool shuffle,
                   uint64_t seed, int64_t epoch, int64_t step) {
  std::vector<int64_t> ids;
  for (int r = 0; r < world; ++r) {
    const std::vector<int64_t> mine =
        DistributedSampler(data.size(), world, r, shuffle, seed).indices(epoch);
    const auto begin = static_cast<size_t>(
        std::min<int64_t>(step * batch_per_rank, static_cast<int64_t>(mine.size())));
    const size_t end = std::min(begin + static_cast<size_t>(batch_per_rank), mine.size());
    ids.insert(ids.end(), mine.begin() + static_cast<std::ptrdiff_t>(begin),
               mine.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return Batch{gather_rows(data.inputs, ids), gather_rows(data.targets, ids)};
}

double equivalence_tolerance(const DdpTrainingOptions& o) {
  if (o.optimizer == "adam") return 0.25 * (o.lr > 0 ? o.lr : 1e-3);
  return 1e-5;
}

double max_abs_difference(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) throw ConfigError("max_abs_difference: different state dicts");
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<float> x = a[i].second.to_vector(), y = b[i].second.to_vector();
    if (x.size() != y.size())
      throw ConfigError("max_abs_difference: \"" + a[i].first + "\" differs in size");
    for (size_t k = 0; k < x.size(); ++k) {
      worst = std::max(worst, std::fabs(static_cast<double>(x[k]) - static_cast<double>(y[k])));
    }
  }
  return worst;
}

double check_equivalence(const DdpTrainingOptions& o, const DdpData& data, ProcessGroup& pg,
                         const SyncFactory& make_sync, int steps) {
  const int world = pg.size(), rank = pg.rank();
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), world, rank, o.shuffle, o.seed);
  const Device device = parse_device(o.device);
  DataLoader loader(data.train, o.batch_size, sampler, false, device);
  loader.start_epoch(0);
  // DDP: a model that starts different on every rank until make_sync broadcasts rank 0's.
  std::shared_ptr<Sequential> ddp_model = make_ddp_model(o, data.sizes, rank);
  std::unique_ptr<GradientSync> sync = make_sync(*ddp_model, pg);
  std::unique_ptr<Optimizer> ddp_opt = make_ddp_optimizer(o, ddp_model->parameters());
  // The serial oracle: the same starting state, one process, batch world * B.
  Rng unused(o.seed + 7919);
  std::shared_ptr<Sequential> serial = make_mlp(data.sizes, unused);
  NamedTensors start;
  for (const auto& [name, t] : ddp_model->state_dict()) start.emplace_back(name, t.clone());
  serial->load_state_dict(start);
  move_module_to(*serial, device);
  std::unique_ptr<Optimizer> serial_opt = make_ddp_optimizer(o, serial->parameters());

  for (int s = 0; s < steps; ++s) {
    const std::optional<Batch> mine = loader.next();
    if (!mine) break;  // a tiny data set: fewer steps than asked
    ddp_train_step(*ddp_model, *ddp_opt, *sync, *mine);
    Batch global = global_batch(data.train, world, o.batch_size, o.shuffle, o.seed, 0, s);
    train_step(*serial, *serial_opt, {global.inputs.to(device), global.targets.to(device)});
  }
  return max_abs_difference(ddp_model->state_dict(), serial->state_dict());
}

std::string check_identical_across_ranks(const Module& model, ProcessGroup& pg,
                                         const std::string& when) {
  return check_identical_across_ranks(model.state_dict(), pg, when);
}

std::string check_identical_across_ranks(const NamedTensors& state, ProcessGroup& pg,
                                         const std::string& when) {
  const std::vector<float> mine = flatten(state);
  std::vector<float> theirs = mine;
  pg.broadcast(theirs, 0);
  std::string problem;  // this rank's first element that is not rank 0's bit pattern
  if (std::memcmp(mine.data(), theirs.data(), mine.size() * sizeof(float)) != 0) {
    size_t at = 0;
    for (const auto& [name, tensor] : state) {
      const auto n = static_cast<size_t>(tensor.numel());
      for (size_t i = 0; i < n && problem.empty(); ++i) {
        if (std::bit_cast<uint32_t>(mine[at + i]) != std::bit_cast<uint32_t>(theirs[at + i])) {
          problem = "rank " + std::to_string(pg.rank()) + "'s parameters differ from rank 0's " +
                    when + " (first " + name + "[" + std::to_string(i) +
                    "]: " + std::to_string(mine[at + i]) + " against " +
                    std::to_string(theirs[at + i]) + ")";
        }
      }
      at += n;
    }
  }
  return first_problem_on_any_rank(problem, pg);
}

Verdict run_ddp_training(const DdpTrainingOptions& o, ProcessGroup& pg,
                         const SyncFactory& make_sync, std::ostream& out) {
  const int world = pg.size(), rank = pg.rank();
  const bool talk = rank == 0 && !o.quiet;
  check_same_flags(ddp_training_flag_values(o), pg);
  const Device device = select_device(o.device, o.local_rank);
  const DdpData data = load_ddp_data(o);
  if (talk) {
    out << "data: " << data.train.size() << " training and " << data.test.size()
        << " test examples from " << o.data << ", " << world << " rank(s) x batch " << o.batch_size
        << " = global batch " << world * o.batch_size << std::endl;
  }

  // 1. Equivalence with one process on the global batch, on a fresh copy.
  const double difference = check_equivalence(o, data, pg, make_sync);

  // The run itself.
  std::shared_ptr<Sequential> model = make_ddp_model(o, data.sizes, rank);
  std::unique_ptr<GradientSync> sync = make_sync(*model, pg);
  // Before any gradient: the ranks started different on purpose; construction must have
  // made them equal (a difference found later would look like a wrong average).
  const std::string unequal = check_identical_across_ranks(
      *model, pg, "right after construction, before any step: the broadcast at construction");
  if (!unequal.empty()) return Verdict::fail(unequal + " did not reach every rank");
  if (talk) {
    out << "equivalence: " << kEquivalenceSteps << " steps on " << world << " rank(s) x "
        << o.batch_size << " vs one process x " << world * o.batch_size
        << ": largest parameter difference " << difference;
    if (!sync->exact()) {
      out << " (gradients compressed: shown, not required)" << std::endl;
    } else {
      out << " (tolerance " << equivalence_tolerance(o) << ")" << std::endl;
    }
  }
  DataLoader test_loader(data.test, 1000, std::make_shared<SequentialSampler>(data.test.size()),
                         false, device);
  if (talk && !o.init.empty()) {
    out << "init: rank 0 loaded " << o.init << ", broadcast to every rank (test accuracy "
        << format_fixed(100 * evaluate(*model, test_loader).accuracy, 2) << "% before training)"
        << std::endl;
  }
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, model->parameters());
  if (talk) {
    out << "model: " << model->parameter_count() << " parameters on " << device_name(device) << ", "
        << o.optimizer << ", " << sync->describe() << std::endl;
  }
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), world, rank, o.shuffle, o.seed);
  DataLoader train_loader(data.train, o.batch_size, sampler, false, device);
  DdpStepTimes totals;  // the current epoch's
  EpochLoopSeams seams;
  seams.step = [&](const Batch& batch, const StepPosition& at) {
    DdpStepTimes times;
    const StepResult r = ddp_train_step(*model, *optimizer, *sync, batch, &times);
    check_finite_step(*model, r.loss, o.detect_anomaly, rank, at.epoch, at.global_step);
    totals.add(times);
    return r;
  };
  seams.evaluate = [&] { return rank == 0 ? evaluate(*model, test_loader).accuracy : 0.0; };
  double samples_per_second = 0;
  seams.end_epoch = [&](const EpochSummary& e) {
    samples_per_second = static_cast<double>(e.samples * world) / std::max(e.seconds, 1e-9);
    if (talk) {
      out << "epoch " << e.epoch << "/" << e.epochs << "  loss (rank 0) " << format_fixed(e.loss, 4)
          << "  train (rank 0) " << format_fixed(100.0 * e.train_accuracy, 2) << "%  test "
          << format_fixed(100 * e.test_accuracy, 2) << "%  " << format_fixed(samples_per_second, 0)
          << " samples/s  step "
          << format_fixed(1e3 * (totals.compute + totals.all_sync()) /
                              static_cast<double>(std::max<int64_t>(e.steps, 1)),
                          2)
          << " ms (" << describe_sync_share(totals) << ")  " << format_fixed(e.seconds, 1) << " s"
          << std::endl;
    }
    totals = DdpStepTimes{};
  };
  const EpochLoopResult run = run_epochs(*sampler, train_loader, o.epochs, seams, kTargetEpochs);
  double best_accuracy = run.best_accuracy;
  int best_epoch = run.best_epoch;

  // 2. Identical parameters everywhere.
  const std::string differs = check_identical_across_ranks(*model, pg);
  if (talk && differs.empty()) {
    out << "parameters: identical on all " << world << " rank(s), bit for bit" << std::endl;
  }
  // Every rank learns rank 0's accuracy, so they all return the same verdict.
  std::vector<float> accuracy{static_cast<float>(best_accuracy), static_cast<float>(best_epoch)};
  pg.broadcast(accuracy, 0);
  best_accuracy = accuracy[0];
  best_epoch = static_cast<int>(accuracy[1]);

  if (!o.checkpoint.empty()) {
    pg.barrier();  // every rank has finished its last step before the file appears
    if (rank == 0) {
      save_checkpoint(o.checkpoint, *model, nullptr, {{"epochs", std::to_string(o.epochs)}});
      if (talk) out << "checkpoint: rank 0 wrote " << o.checkpoint << " (atomically)" << std::endl;
    }
  }

  const std::string summary = format_fixed(100 * best_accuracy, 2) + "% test accuracy at epoch " +
                              std::to_string(best_epoch) + ", " + std::to_string(world) +
                              " rank(s), " + format_fixed(samples_per_second, 0) +
                              " samples/s, equivalence within " + format_fixed(difference, 8);
  if (sync->exact() && !(difference <= equivalence_tolerance(o))) {
    return Verdict::fail("after " + std::to_string(kEquivalenceSteps) +
                         " steps DDP differs from "
                         "one process with the global batch by " +
                         std::to_string(difference) + " (tolerance " +
                         std::to_string(equivalence_tolerance(o)) +
                         "): the gradients are not the mean over ranks");
  }
  if (!differs.empty()) return Verdict::fail(differs);
  if (best_accuracy < o.target) {
    return Verdict::fail(
        "test accuracy " + format_fixed(100 * best_accuracy, 2) + "% within " +
        std::to_string(std::min(o.epochs, kTargetEpochs)) + " epoch(s), below the target of " +
        format_fixed(100 * o.target, 0) + "% (" + summary + ")" +
        (o.epochs < kTargetEpochs || o.limit > 0
             ? ": a short run (--epochs, --limit); --target sets what it must reach"
             : ""));
  }
  return Verdict::pass(summary);
}

}  // namespace course
