// sharding_training.cpp: lesson 13, given: the training run (see sharding_training.h).
#include "sharding_training.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "bench_table.h"
#include "checkpoint.h"
#include "distributed_sampler.h"
#include "epoch_loop.h"
#include "error.h"
#include "flag_agreement.h"
#include "optimizer.h"
#include "rng.h"
#include "sharding_self_check.h"
#include "sync_check.h"
#include "trainer.h"

namespace course {

namespace {

int optimizer_slots(const DdpTrainingOptions& o) {
  if (o.optimizer == "adam") return 2;
  return o.momentum != 0.0f ? 1 : 0;
}

// ---- Memory --------------------------------------------------------------------------

std::string peak_breakdown(const MemoryLedger& ledger) {
  std::string text;
  for (int k = 0; k < kMemoryKinds; ++k) {
    const auto kind = static_cast<MemoryKind>(k);
    if (ledger.at_peak(kind) == 0) continue;
    if (!text.empty()) text += ", ";
    text += std::string(memory_kind_name(kind)) + " " +
            format_mib(static_cast<double>(ledger.at_peak(kind)));
  }
  return text;
}

}  // namespace

// ---- The training run ------------------------------------------------------------------

Verdict run_sharded_training(const ShardedTrainingOptions& o, ProcessGroup& group,
                             std::ostream& out) {
  const int world = group.size(), rank = group.rank();
  const bool talk = rank == 0 && !o.quiet;
  std::map<std::string, std::string> flags = ddp_training_flag_values(o);
  flags["--stage"] = std::to_string(o.sharding.stage);
  flags["--min-unit-params"] = std::to_string(o.sharding.min_unit_params);
  flags["--memory-budget"] = std::to_string(o.memory_budget_mib);
  flags["--no-prefetch"] = o.sharding.prefetch ? "no" : "yes";  // it changes the collectives' order
  check_same_flags(flags, group);
  if (o.device != "cpu") {
    throw ConfigError("rank " + std::to_string(rank) +
                      ": lesson 13 shards on the CPU only (--device cpu)");
  }
  const DdpData data = load_ddp_data(o);
  ShardingOptions sharding = o.sharding;
  sharding.optimizer_slots = optimizer_slots(o);
  if (talk) {
    out << "data: " << data.train.size() << " training and " << data.test.size()
        << " test examples, " << world << " rank(s) x batch " << o.batch_size << std::endl;
  }

  // 1. The same steps as lesson 10's DDP, on fresh copies (outside the budget).
  std::vector<Batch> first;
  {
    auto sampler =
        std::make_shared<DistributedSampler>(data.train.size(), world, rank, o.shuffle, o.seed);
    DataLoader loader(data.train, o.batch_size, sampler);
    loader.start_epoch(0);
    for (int s = 0; s < kEquivalenceSteps; ++s) {
      if (std::optional<Batch> b = loader.next()) first.push_back(*b);
    }
  }
  const ShardedComparison comparison =
      compare_sharded_with_ddp(o, sharding, data.sizes, first, group);
  const double difference = comparison.difference;
  if (talk) {
    out << "equivalence: " << first.size() << " steps of stage " << sharding.stage
        << " vs lesson 10's DDP: largest parameter difference " << difference << " (tolerance "
        << sharded_tolerance(o) << ")" << std::endl;
  }

  // 2. The run, within the budget.
  // Any budget above 0 is at least a byte: 0 means no budget.
  const int64_t budget =
      o.memory_budget_mib > 0
          ? std::max<int64_t>(1, static_cast<int64_t>(o.memory_budget_mib * (1 << 20)))
          : 0;
  MemoryLedger ledger(rank, budget);
  std::shared_ptr<Sequential> mlp = make_ddp_model(o, data.sizes, rank);
  const int64_t psi = mlp->parameter_count();
  ShardedModel model(mlp, group, sharding, ledger);
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, model.shard_parameters());
  const double ddp_bytes = modelled_bytes_per_rank(0, psi, world, sharding.optimizer_slots);
  if (talk) {
    out << "model: " << psi << " parameters, " << o.optimizer << ", " << model.describe()
        << std::endl;
    out << "memory: DDP would hold " << format_mib(ddp_bytes) << " of model state per rank";
    if (budget > 0) {
      out << "; budget " << format_mib(static_cast<double>(budget)) << " per rank (" << std::fixed
          << std::setprecision(1) << ddp_bytes / static_cast<double>(budget) << "x smaller)"
          << std::defaultfloat;
    }
    out << std::endl;
  }
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), world, rank, o.shuffle, o.seed);
  DataLoader train_loader(data.train, o.batch_size, sampler);
  DataLoader test_loader(data.test, 1000, std::make_shared<SequentialSampler>(data.test.size()));
  EpochLoopSeams seams;
  seams.step = [&](const Batch& batch, const StepPosition& at) {
    const StepResult r = ddp_train_step(model, *optimizer, model, batch);
    check_finite_step(model, r.loss, false, rank, at.epoch, at.global_step);
    return r;
  };
  seams.evaluate = [&] { return evaluate(model, test_loader).accuracy; };  // stage 3 gathers
  seams.end_epoch = [&](const EpochSummary& e) {
    if (!talk) return;
    out << "epoch " << e.epoch << "/" << e.epochs << "  loss (rank 0) " << format_fixed(e.loss, 4)
        << "  test " << format_fixed(100 * e.test_accuracy, 2) << "%  "
        << format_fixed(e.seconds, 1) << " s" << std::endl;
  };
  Storage::reset_peak_cpu_bytes();
  const int64_t live_before = Storage::live_cpu_bytes();
  const double best =
      run_epochs(*sampler, train_loader, o.epochs, seams, kTargetEpochs).best_accuracy;
  const int64_t measured = Storage::peak_cpu_bytes() - live_before + ledger.live_bytes();
  const double modelled =
      modelled_bytes_per_rank(sharding.stage, psi, world, sharding.optimizer_slots,
                              model.largest_unit(), sharding.prefetch ? 2 : 1);
  if (talk) {
    out << "memory (rank 0): model state peaked at "
        << format_mib(static_cast<double>(ledger.peak_bytes())) << " (" << peak_breakdown(ledger)
        << "); the model says " << format_mib(modelled) << "; every tensor of the process, "
        << "activations and batches included, peaked at about "
        << format_mib(static_cast<double>(measured)) << std::endl;
  }
  if (!o.checkpoint.empty()) {
    // Collective: every rank gathers the parameters; rank 0 gets the optimizer's state and
    // writes both in lesson 07's format (checkpoint.h: a CRC-32 per tensor, written
    // atomically), as the unsharded model and its optimizer would hold them: lessons 09 and
    // 11 load it as their own.
    const NamedTensors full = model.full_state_dict();
    const NamedTensors consolidated = model.consolidate_optimizer_state(*optimizer, 0);
    if (rank == 0) {
      Rng unused(0);
      std::shared_ptr<Sequential> whole = make_mlp(data.sizes, unused);
      whole->load_state_dict(full);
      std::unique_ptr<Optimizer> whole_optimizer = make_ddp_optimizer(o, whole->parameters());
      // "0.weight.exp_avg" (consolidate_optimizer_state) -> "<i>.exp_avg" (state_tensors).
      const auto named = whole->named_parameters();
      NamedTensors state;
      for (const auto& [name, tensor] : consolidated) {
        for (size_t i = 0; i < named.size(); ++i) {
          const std::string& param = named[i].first;
          if (name.size() > param.size() && name.compare(0, param.size(), param) == 0 &&
              name[param.size()] == '.') {
            state.emplace_back(std::to_string(i) + name.substr(param.size()), tensor);
            break;
          }
        }
      }
      whole_optimizer->load_state(state, optimizer->step_count());
      save_checkpoint(o.checkpoint, *whole, whole_optimizer.get(),
                      {{"stage", std::to_string(sharding.stage)}});
      if (talk) {
        out << "checkpoint: the full parameters and the consolidated optimizer state in "
            << o.checkpoint << " (lesson 07's format, with checksums)" << std::endl;
      }
    }
  }
  const std::string differs = check_identical_across_ranks(model.full_state_dict(), group);
  if (!differs.empty()) return Verdict::fail(differs);
  for (const std::string& problem :
       {comparison.problem, first_problem_on_any_rank(model.schedule_problem(), group)}) {
    if (!problem.empty())
      return Verdict::fail("stage " + std::to_string(sharding.stage) + ": " + problem);
  }
  if (!(difference <= sharded_tolerance(o))) {
    return Verdict::fail("stage " + std::to_string(sharding.stage) + " differs from DDP by " +
                         std::to_string(difference) + " after " + std::to_string(first.size()) +
                         " steps (tolerance " + std::to_string(sharded_tolerance(o)) + ")");
  }
  std::ostringstream detail;
  detail << std::fixed << std::setprecision(2) << "best test accuracy " << 100 * best << "% within "
         << std::min(o.epochs, kTargetEpochs) << " epoch(s) (target " << 100 * o.target
         << "%), ranks identical, equal to DDP";
  if (budget > 0) {
    detail << ", model state within " << format_mib(static_cast<double>(budget)) << " per rank";
  }
  if (best < o.target) return Verdict::fail(detail.str());
  return Verdict::pass(detail.str());
}

}  // namespace course
