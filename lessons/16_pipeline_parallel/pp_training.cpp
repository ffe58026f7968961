// pp_training.cpp: see pp_training.h.
#include "pp_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "distributed_sampler.h"
#include "error.h"
#include "ops.h"
#include "optimizer.h"
#include "pp_checkpoint.h"
#include "rng.h"
#include "sequential.h"
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

PipelineLayout make_pipeline_layout(int rank, int world, int pp) {
  if (pp == 0) pp = world;
  if (pp < 1 || world % pp != 0) {
    throw ConfigError(std::to_string(pp) + " pipeline stages do not divide " +
                      std::to_string(world) + " ranks");
  }
  PipelineLayout l;
  l.stages = pp;
  l.replicas = world / pp;
  l.stage = rank % pp;
  l.replica = rank / pp;
  if (l.stage > 0) l.prev_rank = rank - 1;
  if (l.stage < pp - 1) l.next_rank = rank + 1;
  return l;
}

StageRunner::StageRunner(ProcessGroup& group, const PipelineLayout& layout,
                         const std::vector<int64_t>& sizes, uint64_t seed,
                         const std::string& schedule, int micro_batches, int64_t micro_batch_rows,
                         const std::vector<int>& bounds, ProcessGroup* dp_group)
    : layout_(layout), micro_batches_(micro_batches), rows_(micro_batch_rows) {
  schedule_ = make_schedule(schedule, layout.stages, micro_batches);
  check_schedule(schedule_, micro_batches);
  stage_ = std::make_unique<PipelineStage>(sizes, seed, bounds.at(layout.stage),
                                           bounds.at(layout.stage + 1));
  StagePlacement placement;
  placement.stage = layout.stage;
  placement.stages = layout.stages;
  placement.prev_rank = layout.prev_rank;
  placement.next_rank = layout.next_rank;
  placement.micro_batch_rows = micro_batch_rows;
  executor_ = std::make_unique<PipelineExecutor>(*stage_, group, placement);
  if (dp_group && dp_group->size() > 1) {
    data_parallel_ = std::make_unique<NaiveDdp>(*stage_, *dp_group, GradSync::flat);
  }
}

StepStats StageRunner::step(const Batch& batch, TraceRecorder* trace) {
  std::vector<Tensor> inputs, targets;
  for (int m = 0; m < micro_batches_; ++m) {
    if (layout_.stage == 0) inputs.push_back(batch.inputs.rows(m * rows_, rows_));
    if (layout_.stage == layout_.stages - 1)
      targets.push_back(batch.targets.rows(m * rows_, rows_));
  }
  StepStats st = executor_->run_step(schedule_[layout_.stage], inputs, targets, trace);
  if (data_parallel_) {
    const double t0 = TraceRecorder::now_us();
    data_parallel_->sync_gradients();
    const double t1 = TraceRecorder::now_us();
    st.send_s += (t1 - t0) / 1e6;
    st.step_s += (t1 - t0) / 1e6;
    if (trace) trace->span(TraceRecorder::kComm, "all_reduce dp", t0, t1);
  }
  return st;
}

namespace {

// compare_with_one_process with D = dp_group->size() replicas (1 without a dp group).
double compare_replicas_with_one_process(ProcessGroup& group, ProcessGroup* dp_group,
                                         const EquivalenceCase& c) {
  const int replicas = dp_group ? dp_group->size() : 1;
  const PipelineLayout layout =
      make_pipeline_layout(group.rank(), group.size(), group.size() / replicas);
  const std::vector<int> bounds = partition_layers(layer_parameter_counts(c.sizes), layout.stages);
  StageRunner runner(group, layout, c.sizes, c.seed, c.schedule, c.micro_batches,
                     c.micro_batch_rows, bounds, dp_group);
  Sgd pipeline_sgd(runner.stage().parameters(), {.lr = c.lr});
  Rng rng(c.seed);
  const std::shared_ptr<Sequential> whole = make_mlp(c.sizes, rng);
  Sgd whole_sgd(whole->parameters(), {.lr = c.lr});
  const int64_t replica_rows = c.micro_batches * c.micro_batch_rows;
  const int64_t rows = replicas * replica_rows;
  const int64_t in = c.sizes.front();
  const int64_t classes = c.sizes.back();
  for (int t = 0; t < c.steps; ++t) {
    std::vector<float> x(static_cast<size_t>(rows * in));
    std::vector<float> y(static_cast<size_t>(rows));
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(static_cast<int64_t>((i * 37 + t * 11) % 101) - 50) / 25.0f;
    }
    for (int64_t r = 0; r < rows; ++r) y[r] = static_cast<float>((r * 7 + t * 3) % classes);
    const Batch batch{Tensor::from_vector({rows, in}, x), Tensor::from_vector({rows}, y)};
    const int64_t first = layout.replica * replica_rows;
    pipeline_sgd.zero_grad();
    runner.step({batch.inputs.rows(first, replica_rows), batch.targets.rows(first, replica_rows)});
    pipeline_sgd.step();
    whole_sgd.zero_grad();
    cross_entropy(whole->forward(Variable(batch.inputs)), batch.targets).backward();
    whole_sgd.step();
  }
  std::vector<float> worst = {0.0f};
  const auto whole_params = whole->named_parameters();
  for (const auto& named : runner.stage().named_parameters()) {
    const std::string& name = named.first;
    const auto& p = named.second;
    const auto it = std::find_if(whole_params.begin(), whole_params.end(),
                                 [&](const auto& np) { return np.first == name; });
    if (it == whole_params.end())
      throw ConfigError("the stage's parameter " + name + " is not the model's");
    worst[0] = std::max(worst[0], max_abs_diff(p.data(), it->second.data()));
  }
  group.all_reduce(worst, ReduceOp::MAX);
  return worst[0];
}

}  // namespace

double compare_with_one_process(ProcessGroup& group, const EquivalenceCase& c) {
  return compare_replicas_with_one_process(group, nullptr, c);
}

double compare_pp_dp_with_one_process(ProcessGroup& group, ProcessGroup& dp_group,
                                      const EquivalenceCase& c) {
  return compare_replicas_with_one_process(group, &dp_group, c);
}

double evaluate_pipeline(ProcessGroup& group, const PipelineLayout& layout, PipelineStage& stage,
                         const Dataset& test, int64_t rows) {
  NoGradGuard no_grad;
  const bool first = layout.stage == 0;
  const bool last = layout.stage == layout.stages - 1;
  int64_t correct = 0;
  for (int64_t begin = 0; begin < test.size(); begin += rows) {
    const int64_t n = std::min(rows, test.size() - begin);
    Tensor x = first ? test.inputs.rows(begin, n).reshape({n, stage.in_features()})
                     : Tensor::empty({n, stage.in_features()});
    if (!first) group.recv(x.span(), layout.prev_rank, kEvalTag);
    const Tensor out = stage.forward(Variable(x)).data();
    if (last) {
      correct += count_correct(out, test.targets.rows(begin, n));
    } else {
      group.send(out.span(), layout.next_rank, kEvalTag);
    }
  }
  // The last stage tells the others of its pipeline.
  std::vector<float> accuracy = {static_cast<float>(correct) / static_cast<float>(test.size())};
  const int base = layout.replica * layout.stages;
  if (last) {
    for (int s = 0; s + 1 < layout.stages; ++s) group.send(accuracy, base + s, kEvalTag + 1);
  } else {
    group.recv(accuracy, base + layout.stages - 1, kEvalTag + 1);
  }
  return accuracy[0];
}

Verdict run_pipeline_training(const PipelineOptions& o, ProcessGroup& group, ProcessGroup* dp_group,
                              std::ostream& out) {
  const PipelineLayout layout = make_pipeline_layout(group.rank(), group.size(), o.pp);
  const DdpData data = load_ddp_data(o);
  const int64_t examples = data.train.size();
  if (examples == 0) {
    throw ConfigError(
        "rank " + std::to_string(group.rank()) +
        ": no training examples to cut into micro-batches (check --data and --limit)");
  }
  // --limit is checked with the flags; a data set smaller than it is found here.
  const std::string zero = zero_steps_problem(examples, layout.replicas, o.batch_size);
  if (!zero.empty()) throw ConfigError(o.data + ": " + zero);
  const std::vector<int64_t> sizes =
      model_sizes(o.hidden, data.train.inputs.numel() / examples, data.train.classes);
  const int64_t replica_batch = o.batch_size / layout.replicas;
  const int64_t rows = replica_batch / o.micro_batches;
  std::vector<double> costs = layer_parameter_counts(sizes);
  if (o.balance == "time") {
    // Rank 0 measures, every rank cuts the same way.
    std::vector<float> measured(costs.size());
    if (group.rank() == 0) {
      const std::vector<double> s = measure_layer_seconds(sizes, rows);
      std::copy(s.begin(), s.end(), measured.begin());
    }
    group.broadcast(measured, 0);
    costs.assign(measured.begin(), measured.end());
  }
  const std::vector<int> bounds = partition_layers(costs, layout.stages);
  StageRunner runner(group, layout, sizes, o.seed, o.schedule, o.micro_batches, rows, bounds,
                     dp_group);
  // --init: every stage cuts its layers from the whole model's file (every replica alike).
  if (!o.init.empty()) load_stage_state(o.init, sizes, runner.stage());
  const bool reporter = layout.stage == layout.stages - 1 && layout.replica == 0;
  if (group.rank() == 0) {
    std::ostringstream cut;
    for (int s = 0; s < layout.stages; ++s) {
      cut << (s ? ", " : "") << "stage " << s << ": layers [" << bounds[s] << ", " << bounds[s + 1]
          << ")";
    }
    out << "pipeline: " << layout.stages << " stage(s) x " << layout.replicas << " replica(s), "
        << o.schedule << ", " << o.micro_batches << " micro-batches of " << rows << " rows; "
        << cut.str() << " (balanced by " << o.balance << ")" << std::endl;
  }
  if (o.receive_timeout_s > 0) {
    runner.executor().set_receive_timeout(
        std::chrono::milliseconds(static_cast<int64_t>(o.receive_timeout_s * 1e3)));
  }
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, runner.stage().parameters());
  // Replica d visits its own examples: the shuffled order cut into D shares (lesson 09's
  // DistributedSampler), identical on every stage of the replica.
  auto sampler = std::make_shared<DistributedSampler>(data.train.size(), layout.replicas,
                                                      layout.replica, o.shuffle, o.seed);
  DataLoader loader(data.train, replica_batch, sampler, /*drop_last=*/true);
  double best = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    sampler->set_epoch(epoch);
    loader.start_epoch(epoch);
    double loss = 0, wait = 0, compute = 0;
    int64_t steps = 0;
    while (std::optional<Batch> batch = loader.next()) {
      optimizer->zero_grad();
      const StepStats st = runner.step(*batch);
      optimizer->step();
      if (!std::isfinite(st.loss)) {
        throw ConfigError("the loss is not finite at step " + std::to_string(steps) + " of epoch " +
                          std::to_string(epoch) + ": lower --lr");
      }
      loss += st.loss;
      wait += st.wait_s;
      compute += st.compute_s;
      ++steps;
    }
    const double accuracy = evaluate_pipeline(group, layout, runner.stage(), data.test, 1000);
    best = std::max(best, accuracy);
    if (reporter && !o.quiet) {
      out << "epoch " << epoch << ": loss " << std::fixed << std::setprecision(4)
          << loss / std::max<int64_t>(steps, 1) << ", test accuracy " << std::setprecision(2)
          << 100 * accuracy << "%, last stage waited " << std::setprecision(1)
          << 100 * wait / std::max(wait + compute, 1e-9) << "% of its step time" << std::endl;
    }
  }
  if (!o.checkpoint.empty()) {
    save_pipeline_state(o.checkpoint, group, layout, sizes, bounds, runner.stage(),
                        {{"epochs", std::to_string(o.epochs)}});
    if (group.rank() == 0) {
      out << "checkpoint: rank 0 wrote " << o.checkpoint << ", the whole model gathered from "
          << layout.stages << " stage(s) under one process's names" << std::endl;
    }
  }
  std::ostringstream detail;
  detail << std::fixed << std::setprecision(2) << "best test accuracy " << 100 * best << "% ("
         << o.schedule << ", P = " << layout.stages << ", D = " << layout.replicas
         << ", M = " << o.micro_batches << "; target " << 100 * o.target << "%)";
  if (best < o.target) return Verdict::fail(detail.str());
  return Verdict::pass(detail.str());
}

}  // namespace course
