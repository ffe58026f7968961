// pp_training.cpp: see pp_training.h.
#include "pp_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "bench_table.h"
#include "distributed_sampler.h"
#include "epoch_loop.h"
#include "error.h"
#include "ops.h"
#include "optimizer.h"
#include "pp_checkpoint.h"
#include "rng.h"
#include "sequential.h"
#include "stage_runner.h"
#include "tensor_ops.h"
#include "trainer.h"

namespace course {

namespace {

constexpr int kEvalTag = (1 << 24) - 3;  // forward-only evaluation (and + 1): no micro-batch's

std::vector<int64_t> model_sizes(const std::vector<int64_t>& hidden, int64_t in, int64_t classes) {
  std::vector<int64_t> sizes = {in};
  sizes.insert(sizes.end(), hidden.begin(), hidden.end());
  sizes.push_back(classes);
  return sizes;
}

}  // namespace

std::string zero_steps_problem(int64_t examples, int replicas, int64_t batch_size) {
  // DistributedSampler pads every replica's share to ceil(examples / D); the loader drops a
  // last batch shorter than batch_size / D.
  const int64_t share = (examples + replicas - 1) / replicas;
  const int64_t replica_batch = batch_size / replicas;
  if (share >= replica_batch) return "";
  std::string problem =
      "an epoch would train zero steps: " + std::to_string(examples) + " training examples";
  if (replicas > 1) {
    problem += " give each of the " + std::to_string(replicas) + " replicas " +
               std::to_string(share) + ", fewer than its batch of " +
               std::to_string(replica_batch) + " (--batch-size " + std::to_string(batch_size) +
               " / " + std::to_string(replicas) + ")";
  } else {
    problem += " are fewer than one batch (--batch-size " + std::to_string(batch_size) + ")";
  }
  return problem + ", and a short last batch is dropped: raise --limit or lower --batch-size";
}

std::string check_pipeline_flags(const PipelineOptions& o, int np) {
  const int pp = o.pp == 0 ? np : o.pp;
  const int layers = static_cast<int>(o.hidden.size()) + 1;
  if (pp > layers) {
    return "--pp " + std::to_string(pp) + " is more stages than the model's " +
           std::to_string(layers) + " layers (--hidden has " + std::to_string(o.hidden.size()) +
           " sizes): use --pp at most " + std::to_string(layers) + " or more --hidden sizes";
  }
  if (np % pp != 0) {
    return "--pp " + std::to_string(pp) + " does not divide the " + std::to_string(np) +
           " ranks (--np): the ranks form D = np / pp replicas of the pipeline";
  }
  const int replicas = np / pp;
  if (o.batch_size % (static_cast<int64_t>(replicas) * o.micro_batches) != 0) {
    return "--micro-batches " + std::to_string(o.micro_batches) + " times " +
           std::to_string(replicas) + " replica(s) does not divide the batch of " +
           std::to_string(o.batch_size) + " (--batch-size): every micro-batch of every replica " +
           "must have the same number of rows";
  }
  if (o.limit > 0) {
    const std::string zero = zero_steps_problem(o.limit, replicas, o.batch_size);
    if (!zero.empty()) return "--limit " + std::to_string(o.limit) + ": " + zero;
  }
  return "";
}

double evaluate_pipeline(const DeviceMesh& mesh, StageModule& module, const Dataset& test,
                         int64_t rows) {
  NoGradGuard no_grad;
  ProcessGroup& pp = *mesh.group("pp");  // group rank = stage
  const int stage = mesh.coordinate("pp");
  const int stages = mesh.size("pp");
  const bool first = stage == 0;
  const bool last = stage == stages - 1;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < test.size(); begin += rows) {
    const int64_t n = std::min(rows, test.size() - begin);
    Tensor x = first ? test.inputs.rows(begin, n).reshape({n, module.in_features()})
                     : Tensor::empty({n, module.in_features()});
    if (!first) pp.recv(x.span(), stage - 1, kEvalTag);
    const Tensor out = module.forward(Variable(x)).data();
    if (last) {
      correct += count_correct(out, test.targets.rows(begin, n));
    } else {
      pp.send(out.span(), stage + 1, kEvalTag);
    }
  }
  // The last stage tells the others of its pipeline.
  std::vector<float> accuracy = {static_cast<float>(correct) / static_cast<float>(test.size())};
  if (last) {
    for (int s = 0; s + 1 < stages; ++s) pp.send(accuracy, s, kEvalTag + 1);
  } else {
    pp.recv(accuracy, stages - 1, kEvalTag + 1);
  }
  return accuracy[0];
}

Verdict run_pipeline_training(const PipelineOptions& o, const DeviceMesh& mesh, std::ostream& out) {
  const int stages = mesh.size("pp");
  const int replicas = mesh.size("dp");
  const int replica = mesh.coordinate("dp");
  const DdpData data = load_ddp_data(o);
  const int64_t examples = data.train.size();
  if (examples == 0) {
    throw ConfigError(
        "rank " + std::to_string(mesh.rank()) +
        ": no training examples to cut into micro-batches (check --data and --limit)");
  }
  // --limit is checked with the flags; a data set smaller than it is found here.
  const std::string zero = zero_steps_problem(examples, replicas, o.batch_size);
  if (!zero.empty()) throw ConfigError(o.data + ": " + zero);
  const std::vector<int64_t> sizes =
      model_sizes(o.hidden, data.train.inputs.numel() / examples, data.train.classes);
  const int64_t replica_batch = o.batch_size / replicas;
  const int64_t rows = replica_batch / o.micro_batches;
  std::vector<double> costs = layer_parameter_counts(sizes);
  if (o.balance == "time") {
    // World rank 0 measures, every rank cuts the same way: from it to stage 0 of every
    // replica (their "dp" group), then along each pipeline (its "pp" group).
    std::vector<float> measured(costs.size());
    if (mesh.rank() == 0) {
      const std::vector<double> s = measure_layer_seconds(sizes, rows);
      std::copy(s.begin(), s.end(), measured.begin());
    }
    if (mesh.coordinate("pp") == 0) mesh.group("dp")->broadcast(measured, 0);
    mesh.group("pp")->broadcast(measured, 0);
    costs.assign(measured.begin(), measured.end());
  }
  const std::vector<int> bounds = partition_layers(costs, stages);
  StageRunner runner(mesh, sizes, o.seed, o.schedule, o.micro_batches, rows, bounds);
  // --init: every stage cuts its layers from the whole model's file (every replica alike).
  if (!o.init.empty()) load_stage_state(o.init, sizes, runner.module());
  const bool reporter = runner.stage() == stages - 1 && replica == 0;
  if (mesh.rank() == 0) {
    std::ostringstream cut;
    for (int s = 0; s < stages; ++s) {
      cut << (s ? ", " : "") << "stage " << s << ": layers [" << bounds[s] << ", " << bounds[s + 1]
          << ")";
    }
    out << "pipeline: " << stages << " stage(s) x " << replicas << " replica(s), " << o.schedule
        << ", " << o.micro_batches << " micro-batches of " << rows << " rows; " << cut.str()
        << " (balanced by " << o.balance << ")" << std::endl;
  }
  if (o.receive_timeout_s > 0) {
    runner.executor().set_receive_timeout(
        std::chrono::milliseconds(static_cast<int64_t>(o.receive_timeout_s * 1e3)));
  }
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, runner.module().parameters());
  // Replica d visits its own examples: the shuffled order cut into D shares (lesson 09's
  // DistributedSampler), identical on every stage of the replica.
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), replicas, replica, o.shuffle, o.seed);
  DataLoader loader(data.train, replica_batch, sampler, /*drop_last=*/true);
  double wait = 0, compute = 0;  // the current epoch's
  EpochLoopSeams seams;
  seams.step = [&](const Batch& batch, const StepPosition& at) {
    optimizer->zero_grad();
    const StepStats st = runner.step(batch);
    optimizer->step();
    if (!std::isfinite(st.loss)) {
      throw ConfigError("the loss is not finite at step " + std::to_string(at.step) + " of epoch " +
                        std::to_string(at.epoch + 1) + ": lower --lr");
    }
    wait += st.wait_s;
    compute += st.compute_s;
    return StepResult{static_cast<float>(st.loss), 0};
  };
  seams.evaluate = [&] { return evaluate_pipeline(mesh, runner.module(), data.test, 1000); };
  seams.end_epoch = [&](const EpochSummary& e) {
    if (reporter && !o.quiet) {
      // As lessons 07-15 print an epoch: "epoch 1/4  loss ...  test ...%".
      out << "epoch " << e.epoch << "/" << e.epochs << "  loss (replica 0) "
          << format_fixed(e.loss, 4) << "  test " << format_fixed(100 * e.test_accuracy, 2)
          << "%  last stage waited " << format_fixed(100 * wait / std::max(wait + compute, 1e-9), 1)
          << "% of its step time" << std::endl;
    }
    wait = compute = 0;
  };
  // Every epoch counts towards --target here (lesson 16 trains 4 by default).
  const double best = run_epochs(*sampler, loader, o.epochs, seams, o.epochs).best_accuracy;
  if (!o.checkpoint.empty()) {
    save_pipeline_state(o.checkpoint, mesh, sizes, bounds, runner.module(),
                        {{"epochs", std::to_string(o.epochs)}});
    if (mesh.rank() == 0) {
      out << "checkpoint: rank 0 wrote " << o.checkpoint << ", the whole model gathered from "
          << stages << " stage(s) under one process's names" << std::endl;
    }
  }
  std::ostringstream detail;
  detail << std::fixed << std::setprecision(2) << "best test accuracy " << 100 * best << "% ("
         << o.schedule << ", P = " << stages << ", D = " << replicas << ", M = " << o.micro_batches
         << "; target " << 100 * o.target << "%)";
  if (best < o.target) return Verdict::fail(detail.str());
  return Verdict::pass(detail.str());
}

}  // namespace course
