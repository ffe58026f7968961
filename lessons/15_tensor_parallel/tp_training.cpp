// tp_training.cpp: lesson 15, given: the step and the training run (tp_training.h).
#include "tp_training.h"

#include <algorithm>
#include <sstream>

#include "bench_table.h"
#include "checkpoint.h"
#include "distributed_data_parallel.h"
#include "distributed_sampler.h"
#include "epoch_loop.h"
#include "error.h"
#include "memory_ledger.h"
#include "model_state_bytes.h"
#include "ops.h"
#include "tp_equivalence.h"
#include "tp_ops.h"
#include "vocab_parallel_loss.h"

namespace course {

ModelShape tp_model_shape(const TpTrainingOptions& o) {
  if (o.hidden.size() != 1) {
    throw ConfigError("--hidden takes one size here, the blocks' width H (got " +
                      std::to_string(o.hidden.size()) + " values)");
  }
  return ModelShape{.inputs = 784, .hidden = o.hidden[0], .blocks = o.blocks, .classes = 10};
}

NamedTensors tp_initial_state(const TpTrainingOptions& o, const ModelShape& shape) {
  Rng rng(o.seed);
  std::shared_ptr<SerialMlp> serial = make_serial_model(shape, rng);
  if (!o.init.empty()) load_checkpoint(o.init, *serial, nullptr);
  return serial->state_dict();
}

StepResult tp_train_step(TensorParallelMlp& model, Optimizer& optimizer, GradientSync* dp_sync,
                         const Batch& batch) {
  optimizer.zero_grad();
  const Variable logits_t = model.forward(Variable(batch.inputs));
  const Variable loss =
      vocab_parallel_cross_entropy(logits_t, batch.targets, model.shape().classes, model.group());
  if (dp_sync) dp_sync->prepare_for_backward();
  loss.backward();
  if (dp_sync) dp_sync->finish_backward();
  // (Training accuracy would need every logit or two more all-reduces; the verdict uses
  // the test set's, evaluated with the head's shards gathered.)
  optimizer.step();
  return StepResult{loss.item(), 0};
}

std::unique_ptr<GradientSync> make_tp_dp_sync(Module& model, const DeviceMesh& mesh) {
  if (mesh.size("dp") == 1) return nullptr;
  return std::make_unique<DistributedDataParallel>(model, *mesh.group("dp"));
}

namespace {

// Test accuracy on every rank: each batch's logits gathered over the TP group (the only
// place every logit meets). The same value on every rank of the group.
double tp_test_accuracy(TensorParallelMlp& model, DataLoader& loader) {
  loader.start_epoch(0);
  int64_t correct = 0, samples = 0;
  while (std::optional<Batch> batch = loader.next()) {
    correct += count_correct(model.full_logits(batch->inputs), batch->targets);
    samples += batch->targets.numel();
  }
  return static_cast<double>(correct) / static_cast<double>(std::max<int64_t>(samples, 1));
}

// The first step's memory on this rank: the model state by kind in lesson 13's ledger
// (the optimizer's state exists from the first step on), beside 16 bytes per parameter of
// this rank (4 + 4 + 8 with Adam; SGD's momentum is 4), and the rest of the step's peak:
// activations, the batch, temporaries.
void report_memory(const TensorParallelMlp& model, const Optimizer& optimizer, int64_t step_peak,
                   std::ostream& out) {
  MemoryLedger ledger(model.group().rank());
  const ModelStateBytes bytes = model_state_bytes(model, optimizer);
  const int64_t params = bytes.parameters, grads = bytes.gradients, state = bytes.optimizer;
  ledger.add(MemoryKind::parameters, params, "the shards and the replicated parameters");
  ledger.add(MemoryKind::gradients, grads, "their gradients");
  ledger.add(MemoryKind::optimizer, state, "the optimizer's state");
  const int64_t per_rank = model.shape().parameters_per_rank(model.group().size());
  const bool adam = state >= 2 * params;  // two moments; SGD's momentum is one
  out << "memory (rank 0, first step): " << ledger.describe_live() << "; the model: " << per_rank
      << " parameters per rank x (4 + 4 + " << (adam ? 8 : 4)
      << ") bytes = " << format_mib(static_cast<double>(per_rank) * (adam ? 16 : 12))
      << "; activations, batch and temporaries at the step's peak: "
      << format_mib(static_cast<double>(step_peak - grads - state)) << std::endl;
}

}  // namespace

Verdict run_tp_training(const TpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& world,
                        std::ostream& out) {
  const int D = mesh.size("dp"), T = mesh.size("tp"), dp_index = mesh.coordinate("dp");
  ProcessGroup& tp = *mesh.group("tp");
  const int rank = world.rank();
  const bool talk = rank == 0 && !o.quiet;
  const ModelShape shape = tp_model_shape(o);
  const DdpData data = load_ddp_data(o);
  if (talk) {
    out << "data: " << data.train.size() << " training and " << data.test.size()
        << " test examples, " << D << " replica(s) x batch " << o.batch_size << " = global batch "
        << D * o.batch_size << std::endl;
  }
  const NamedTensors init = tp_initial_state(o, shape);

  // 1. Equivalence with one process on the global batch.
  std::vector<Batch> batches;
  for (int step = 0; step < kTpEquivalenceSteps; ++step) {
    batches.push_back(global_batch(data.train, D, o.batch_size, o.shuffle, o.seed, 0, step));
  }
  const double difference = tp_equivalence_difference(o, shape, init, batches, mesh, world);
  if (talk) {
    out << "equivalence: " << kTpEquivalenceSteps << " steps at (D, T) = (" << D << ", " << T
        << ") vs one process x " << D * o.batch_size << ": largest parameter difference "
        << difference << " (tolerance " << tp_tolerance(o) << ")" << std::endl;
  }

  // The run itself.
  TensorParallelMlp model(init, shape, tp);
  std::unique_ptr<GradientSync> dp_sync = make_tp_dp_sync(model, mesh);
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, model.parameters());
  if (talk) {
    out << "model: " << shape.parameters() << " parameters, " << model.parameter_count()
        << " on each rank (" << shape.replicated_parameters() << " replicated), " << o.optimizer
        << (dp_sync ? ", " + dp_sync->describe() + " over each data-parallel group" : "")
        << std::endl
        << "       " << model.describe() << std::endl;
  }
  DataLoader test_loader(data.test, 1000, std::make_shared<SequentialSampler>(data.test.size()));
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), D, dp_index, o.shuffle, o.seed);
  DataLoader train_loader(data.train, o.batch_size, sampler);
  EpochLoopSeams seams;
  seams.step = [&](const Batch& batch, const StepPosition& at) {
    const int64_t live_before = Storage::live_cpu_bytes();
    if (at.global_step == 0) Storage::reset_peak_cpu_bytes();
    const StepResult r = tp_train_step(model, *optimizer, dp_sync.get(), batch);
    if (at.global_step == 0 && talk) {
      report_memory(model, *optimizer, Storage::peak_cpu_bytes() - live_before, out);
    }
    check_finite_step(model, r.loss, o.detect_anomaly, rank, at.epoch, at.global_step);
    return r;
  };
  seams.evaluate = [&] { return tp_test_accuracy(model, test_loader); };
  seams.end_epoch = [&](const EpochSummary& e) {
    if (!talk) return;
    out << "epoch " << e.epoch << "/" << e.epochs << "  loss (replica 0) "
        << format_fixed(e.loss, 4) << "  test " << format_fixed(100 * e.test_accuracy, 2)
        << "%  step "
        << format_fixed(1e3 * e.seconds / static_cast<double>(std::max<int64_t>(e.steps, 1)), 2)
        << " ms  " << format_fixed(e.seconds, 1) << " s" << std::endl;
  };
  const EpochLoopResult run = run_epochs(*sampler, train_loader, o.epochs, seams, kTargetEpochs);
  const double best_accuracy = run.best_accuracy;
  const int best_epoch = run.best_epoch;

  // 2. Every replica holds the same model (the full state dict, gathered per TP group).
  const NamedTensors full = model.full_state_dict();
  const std::string differs = check_identical_across_ranks(full, world);
  if (talk && differs.empty()) {
    out << "parameters: the full model identical on all " << world.size() << " rank(s), bit for bit"
        << std::endl;
  }
  if (!o.checkpoint.empty()) {
    if (rank == 0) {
      Rng unused(0);
      SerialMlp serial(shape, unused);
      serial.load_state_dict(full);
      save_checkpoint(o.checkpoint, serial, nullptr, {{"tp", std::to_string(T)}});
      if (talk) out << "checkpoint: the full state dict written to " << o.checkpoint << std::endl;
    }
    world.barrier();
  }
  if (difference > tp_tolerance(o)) {
    return Verdict::fail("equivalence: the parameters differ from one process's by " +
                         std::to_string(difference) + " after " +
                         std::to_string(kTpEquivalenceSteps) + " steps (tolerance " +
                         std::to_string(tp_tolerance(o)) + ")");
  }
  if (!differs.empty()) return Verdict::fail(differs);
  std::ostringstream detail;
  detail << "(D, T) = (" << D << ", " << T << "), equal to one process within " << tp_tolerance(o)
         << ", best test accuracy " << format_fixed(100 * best_accuracy, 2) << "% (epoch "
         << best_epoch << ")";
  if (best_accuracy < o.target) {
    return Verdict::fail("test accuracy " + format_fixed(100 * best_accuracy, 2) +
                         "% is below the target " + format_fixed(100 * o.target, 2) + "% " +
                         detail.str());
  }
  return Verdict::pass(detail.str());
}

}  // namespace course
