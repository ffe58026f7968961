// capstone.cpp: lesson 11, the training program (given; see capstone.h).
#include "capstone.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench_table.h"
#include "bn_mlp.h"
#include "checkpoint.h"
#include "clock.h"
#include "distributed_data_parallel.h"
#include "distributed_eval.h"
#include "distributed_sampler.h"
#include "error.h"
#include "flag_agreement.h"
#include "reducer.h"
#include "run_dir_lock.h"
#include "svg_canvas.h"
#include "sync_batch_norm.h"
#include "tensor_ops.h"
#include "training_checkpoint.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

std::string history_to_string(const std::vector<EpochRecord>& h) {
  std::ostringstream s;
  s.precision(9);
  for (const EpochRecord& r : h) {
    s << r.epoch << ',' << r.train_loss << ',' << r.train_accuracy << ',' << r.test_loss << ','
      << r.test_accuracy << ',' << r.samples_per_second << ',' << r.seconds << ';';
  }
  return s.str();
}

std::vector<EpochRecord> history_from_string(const std::string& text) {
  std::vector<EpochRecord> h;
  std::istringstream rows(text);
  std::string row;
  while (std::getline(rows, row, ';')) {
    EpochRecord r;
    char c;
    std::istringstream f(row);
    f >> r.epoch >> c >> r.train_loss >> c >> r.train_accuracy >> c >> r.test_loss >> c >>
        r.test_accuracy >> c >> r.samples_per_second >> c >> r.seconds;
    if (f) h.push_back(r);
  }
  return h;
}

void progress_bar(std::ostream& out, int epoch, int64_t step, int64_t steps) {
  const int width = 30, done = static_cast<int>(width * step / std::max<int64_t>(steps, 1));
  out << "\repoch " << epoch << " [" << std::string(static_cast<size_t>(done), '#')
      << std::string(static_cast<size_t>(width - done), '.') << "] " << step << "/" << steps
      << std::flush;
}

}  // namespace

std::map<std::string, std::string> capstone_run_config(const CapstoneOptions& o,
                                                       const std::vector<int64_t>& sizes,
                                                       int world) {
  std::string shape;
  for (int64_t s : sizes) shape += (shape.empty() ? "" : "-") + std::to_string(s);
  const DdpTrainingOptions& t = o.train;
  return {
      {"model", shape + (o.sync_bn ? " sync-bn" : " bn")},
      {"world_size", std::to_string(world)},
      {"batch_size", std::to_string(t.batch_size)},
      {"seed", std::to_string(t.seed)},
      {"shuffle", t.shuffle ? "1" : "0"},
      {"limit", std::to_string(t.limit)},
      {"optimizer", t.optimizer + " lr " + format_fixed(learning_rate(t), 6) + " momentum " +
                        format_fixed(t.momentum, 4) + " wd " + format_fixed(t.weight_decay, 6)}};
}

double check_sync_batch_norm(ProcessGroup& bn_group) {
  constexpr int64_t kChannels = 6;
  const int world = bn_group.size(), rank = bn_group.rank();
  const int64_t total = 2 * world + world * (world - 1) / 2,
                begin = 2 * rank + rank * (rank - 1) / 2;
  const int64_t mine = 2 + rank;
  std::vector<float> x(static_cast<size_t>(total * kChannels)), g(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    x[k] = static_cast<float>(std::sin(0.9 * k) * (1 + k % kChannels) + 0.1 * (k % kChannels));
    g[k] = static_cast<float>(std::cos(0.4 * k));
  }
  const Tensor x_all = Tensor::from_vector({total, kChannels}, x);
  const Tensor g_all = Tensor::from_vector({total, kChannels}, g);
  SyncBatchNorm sync(kChannels, bn_group);
  BatchNorm1d oracle(kChannels);
  Variable x_mine(x_all.rows(begin, mine).clone(), true), x_full(x_all, true);
  const Variable y_mine = sync.forward(x_mine), y_full = oracle.forward(x_full);
  y_mine.backward(g_all.rows(begin, mine).clone());
  y_full.backward(g_all);
  std::vector<float> worst{max_abs_diff(y_mine.data(), y_full.data().rows(begin, mine).clone()),
                           max_abs_diff(x_mine.grad(), x_full.grad().rows(begin, mine).clone())};
  worst[0] = std::max(worst[0], worst[1]);
  worst.resize(1);
  bn_group.all_reduce(worst, ReduceOp::MAX);
  return worst[0];
}

DdpData prepare_data_cached(const DdpTrainingOptions& o, const std::string& cache,
                            ProcessGroup& pg) {
  const std::string key = o.data + " limit " + std::to_string(o.limit);
  auto matches = [&] {
    try {
      return std::filesystem::exists(cache) && load_safetensors(cache).metadata.at("key") == key;
    } catch (const std::exception&) {
      return false;
    }
  };
  if (pg.rank() == 0 && !matches()) {
    const DdpData d = load_ddp_data(o);
    std::filesystem::create_directories(std::filesystem::path(cache).parent_path());
    save_safetensors(cache,
                     {{"train.inputs", d.train.inputs},
                      {"train.targets", d.train.targets},
                      {"test.inputs", d.test.inputs},
                      {"test.targets", d.test.targets}},
                     {{"key", key}, {"classes", std::to_string(d.train.classes)}});
  }
  pg.barrier();  // the file is complete (renamed into place) before anyone reads it
  // A rank on another machine without the shared directory prepares its own copy.
  if (!std::filesystem::exists(cache)) return load_ddp_data(o);
  const SafetensorsFile f = load_safetensors(cache);
  DdpData d;
  const int64_t classes = std::stoll(f.metadata.at("classes"));
  d.train = Dataset{f.at("train.inputs"), f.at("train.targets"), classes};
  d.test = Dataset{f.at("test.inputs"), f.at("test.targets"), classes};
  d.sizes = {d.train.inputs.size(1)};
  d.sizes.insert(d.sizes.end(), o.hidden.begin(), o.hidden.end());
  d.sizes.push_back(classes);
  return d;
}

void write_curves(const std::string& dir, const std::vector<EpochRecord>& history) {
  std::filesystem::create_directories(dir);
  std::ofstream csv(dir + "/curves.csv");
  csv << "epoch,train_loss,train_accuracy,test_loss,test_accuracy,samples_per_s,seconds\n";
  for (const EpochRecord& r : history) {
    csv << r.epoch << ',' << r.train_loss << ',' << r.train_accuracy << ',' << r.test_loss << ','
        << r.test_accuracy << ',' << r.samples_per_second << ',' << r.seconds << '\n';
  }
  // Accuracy (%) against epoch, 70..100, one polyline per curve.
  const double w = 480, h = 300, left = 50, bottom = 40, top = 20, right = 20;
  const int epochs = std::max<int>(static_cast<int>(history.size()), 1);
  auto px = [&](double epoch) { return left + (w - left - right) * epoch / epochs; };
  auto py = [&](double acc) {
    const double a = std::clamp(100 * acc, 70.0, 100.0);
    return h - bottom - (h - top - bottom) * (a - 70) / 30;
  };
  SvgCanvas svg(w, h);
  for (int a = 70; a <= 100; a += 10) {
    svg.line(left, py(a / 100.0), w - right, py(a / 100.0), "#ddd");
    svg.text(10, py(a / 100.0) + 4, std::to_string(a) + "%");
  }
  const char* names[] = {"test accuracy", "train accuracy (before each update)"};
  const char* colours[] = {"#1f77b4", "#ff7f0e"};
  for (int k = 0; k < 2; ++k) {
    std::vector<std::pair<double, double>> points;
    for (const EpochRecord& r : history) {
      points.emplace_back(px(r.epoch), py(k == 0 ? r.test_accuracy : r.train_accuracy));
    }
    svg.polyline(points, colours[k]);
    svg.text(left + 10, top + 15 * (k + 1), names[k], {.fill = colours[k]});
  }
  svg.text(w / 2, h - 10, "epoch");
  svg.write(dir + "/curves.svg");
}

CapstoneResult run_capstone(const CapstoneOptions& o, ProcessGroup& pg, ProcessGroup& bn_group,
                            std::ostream& out) {
  const int world = pg.size(), rank = pg.rank();
  const bool talk = rank == 0 && !o.train.quiet;
  const bool bar = talk && ::isatty(STDOUT_FILENO);
  const DdpTrainingOptions& t = o.train;
  const Device device = select_device(t.device, t.local_rank);

  // The same flags on every rank, and this run alone in its run directory.
  std::map<std::string, std::string> flags = ddp_training_flag_values(t);
  flags["--sync-bn"] = o.sync_bn ? "on" : "off";
  flags["--target"] = format_fixed(o.target, 6);
  check_same_flags(flags, pg);
  const RunDirLock lock = lock_run_dir(o.run_dir, pg);

  // 0. SyncBatchNorm against BatchNorm1d, before anything is loaded.
  const double bn_difference = check_sync_batch_norm(bn_group);
  if (talk) {
    out << "SyncBatchNorm: " << world << " rank(s) with 2, 3, ... rows vs BatchNorm1d on all "
        << "rows: largest difference " << bn_difference << " (tolerance " << kSyncBatchNormTolerance
        << ")" << std::endl;
  }

  // 1. Data: rank 0 prepares, the others wait at the barrier, then everyone reads.
  const DdpData data = prepare_data_cached(t, o.run_dir + "/prepared-data.safetensors", pg);
  if (talk) {
    out << "data: " << data.train.size() << " training and " << data.test.size()
        << " test examples (cache " << o.run_dir << "/prepared-data.safetensors), " << world
        << " rank(s) x batch " << t.batch_size << std::endl;
  }

  // 2-3. Model, SyncBatchNorm, DDP, optimizer.
  Rng rng(t.seed + static_cast<uint64_t>(rank));
  std::shared_ptr<LayerStack> model = make_bn_mlp(data.sizes, rng);
  if (rank == 0 && !t.init.empty()) load_checkpoint(t.init, *model, nullptr);
  if (o.sync_bn) model = convert_sync_batchnorm(*model, bn_group);
  move_module_to(*model, device);           // parameters; BatchNorm's statistics stay on the host
  DistributedDataParallel ddp(*model, pg);  // rank 0's parameters and buffers everywhere
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(t, model->parameters());
  const RunConfig config = capstone_run_config(o, data.sizes, world);
  if (talk) {
    out << "model: " << model->parameter_count() << " parameters on " << device_name(device) << ", "
        << (o.sync_bn ? "SyncBatchNorm" : "BatchNorm1d per rank") << ", " << t.optimizer << ", "
        << ddp.describe() << std::endl;
  }

  // 4. Resume.
  CapstoneResult result;
  int start_epoch = 0;
  if (o.resume) {
    if (std::optional<ResumeState> r =
            resume_from_latest(o.checkpoints(), *model, *optimizer, config, pg, out)) {
      start_epoch = r->epoch;
      result.resumed_from = r->epoch;
      const auto history = r->metadata.find("history");
      if (rank == 0 && history != r->metadata.end()) {
        result.history = history_from_string(history->second);
      }
    } else if (talk) {
      out << "resume: no checkpoint in " << o.checkpoints() << ", starting fresh" << std::endl;
    }
  }

  // 5-7. Epochs.
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), world, rank, t.shuffle, t.seed);
  DataLoader loader(data.train, t.batch_size, sampler, /*drop_last=*/true, device);
  int64_t global_step = 0;
  for (int epoch = start_epoch; epoch < t.epochs; ++epoch) {
    model->set_training(true);
    sampler->set_epoch(epoch);
    loader.start_epoch(epoch);
    const int64_t steps = loader.num_batches();
    global_step = static_cast<int64_t>(epoch) * steps;
    const auto start = Clock::now();
    double loss_sum = 0;
    int64_t correct = 0, samples = 0, step = 0;
    DdpStepTimes totals;  // where the steps' time went (ddp_training.h)
    while (std::optional<Batch> batch = loader.next()) {
      if (global_step == o.crash_step && rank == o.crash_rank) std::raise(SIGKILL);
      DdpStepTimes times;
      const StepResult r = ddp_train_step(*model, *optimizer, ddp, *batch, &times);
      totals.add(times);
      check_finite_step(*model, r.loss, t.detect_anomaly, rank, epoch, global_step);
      loss_sum += static_cast<double>(r.loss) * batch->targets.numel();
      correct += r.correct;
      samples += batch->targets.numel();
      ++step;
      ++global_step;
      if (bar && (step % 20 == 0 || step == steps)) progress_bar(out, epoch + 1, step, steps);
    }
    const double seconds = seconds_since(start);
    if (bar) out << "\r" << std::string(60, ' ') << "\r";
    if (!o.sync_bn) broadcast_buffers(*model, pg);
    model->set_training(false);
    const EvalStats e = evaluate_distributed(*model, data.test, pg);
    EpochRecord rec{epoch + 1,
                    loss_sum / std::max<int64_t>(samples, 1),
                    static_cast<double>(correct) / std::max<int64_t>(samples, 1),
                    e.loss,
                    e.accuracy,
                    static_cast<double>(samples * world) / std::max(seconds, 1e-9),
                    seconds};
    result.history.push_back(rec);
    if (talk) {
      out << "epoch " << rec.epoch << "/" << t.epochs << "  loss (rank 0) "
          << format_fixed(rec.train_loss, 4) << "  train (rank 0) "
          << format_fixed(100 * rec.train_accuracy, 2) << "%  test "
          << format_fixed(100 * e.accuracy, 2) << "% (" << e.samples << " examples over " << world
          << " rank(s))  " << format_fixed(rec.samples_per_second, 0) << " samples/s  step "
          << format_fixed(1e3 * (totals.compute + totals.all_sync()) / std::max<int64_t>(step, 1),
                          2)
          << " ms (" << describe_sync_share(totals) << ")  " << format_fixed(seconds, 1) << " s"
          << std::endl;
    }
    if (o.save_checkpoints) {
      if (rank == 0) {
        // The curves so far ride along, so a resumed run can draw the whole run.
        const std::string path =
            save_training_checkpoint(o.checkpoints(), epoch + 1, *model, *optimizer, config,
                                     {{"history", history_to_string(result.history)}});
        if (talk) out << "checkpoint: rank 0 wrote " << path << std::endl;
      }
      pg.barrier();  // no rank runs ahead of a checkpoint that is not on disk yet
    }
  }

  // 8. Identical everywhere, curves, verdict.
  const std::string differs = check_identical_across_ranks(*model, pg);
  for (const auto& [name, tensor] : model->state_dict()) {
    result.final_state.emplace_back(name, tensor.clone());
  }
  if (rank == 0 && !t.checkpoint.empty()) {  // --checkpoint: the final weights, as lesson 09
    save_checkpoint(t.checkpoint, *model, nullptr);
    if (talk)
      out << "checkpoint: rank 0 wrote the final state dict to " << t.checkpoint << std::endl;
  }
  const double accuracy = result.history.empty() ? 0 : result.history.back().test_accuracy;
  if (rank == 0 && !result.history.empty()) {
    write_curves(o.run_dir, result.history);
    if (talk) {
      out << "curves: " << o.run_dir << "/curves.csv and " << o.run_dir << "/curves.svg"
          << std::endl;
    }
  }
  std::vector<float> shared{static_cast<float>(accuracy)};
  pg.broadcast(shared, 0);
  const std::string summary = format_fixed(100 * shared[0], 2) + "% test accuracy after " +
                              std::to_string(t.epochs) + " epoch(s) on " + std::to_string(world) +
                              " rank(s); checkpoints in " + o.checkpoints() + ", curves in " +
                              o.run_dir + "/curves.svg";
  if (!(bn_difference <= kSyncBatchNormTolerance)) {
    result.verdict = Verdict::fail("SyncBatchNorm differs from BatchNorm1d on all ranks' rows by " +
                                   std::to_string(bn_difference));
  } else if (!differs.empty()) {
    result.verdict = Verdict::fail(differs);
  } else if (shared[0] < o.target) {
    const bool short_run = t.epochs < kCapstoneEpochs || t.limit > 0;
    result.verdict = Verdict::fail(
        "below the target of " + format_fixed(100 * o.target, 0) + "%: " + summary +
        (short_run ? ": a short run (--epochs under " + std::to_string(kCapstoneEpochs) +
                         ", or --limit); the target needs the whole run: --target sets what a "
                         "short one must reach"
                   : ""));
  } else {
    result.verdict = Verdict::pass(summary);
  }
  return result;
}

}  // namespace course
