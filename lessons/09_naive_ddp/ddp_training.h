// ddp_training.h: lesson 09, the given data-parallel training loop, shared by the drivers
// of lessons 09, 10 and 11: flags, data, model, the step, the epochs and the verdict,
// written once and parameterised by how gradients travel (GradientSync).
//
//   DdpTrainingOptions o;                           // lesson 07's flags plus DDP's
//   add_ddp_training_flags(app, o);                 // ddp_training_flags.h, in main.cpp
//   ...
//   Verdict v = run_ddp_training(o, *pg, [](Module& m, ProcessGroup& g) {
//     return std::make_unique<NaiveDdp>(m, g, GradSync::flat);   // or lesson 10's Reducer
//   }, std::cout);
//
// Every rank runs this, with its own model, optimizer and data loader; ranks exchange only
// gradients (inside GradientSync) and, around the training, a few checks:
//
//   rank r:  the same flags on every rank (check_same_flags: ConfigError naming the flag)
//            load data (the whole set; a DistributedSampler picks rank r's share)
//            model = make_mlp(seed + r)      ranks start different on purpose
//            rank 0 only: --init PATH        load the starting state dict
//            sync = make_sync(model, pg)     checks shapes, broadcasts rank 0's state
//            every rank's parameters equal rank 0's (else FAIL: the broadcast)
//            equivalence check (below), on a copy of that state
//            for each epoch: sampler.set_epoch(e); for each batch:
//                zero_grad; forward; loss; sync.prepare_for_backward(); backward;
//                sync.finish_backward()      every grad() is now the mean over ranks
//                optimizer.step()            the same update on every rank
//            a NaN or infinite loss (--detect-anomaly: gradient) stops the run, naming
//            the step, the rank and the parameter (check_finite_step)
//            rank 0: test accuracy; prints one line per epoch
//            identical parameters on every rank (rank 0's broadcast, compared bit for bit)
//            --checkpoint PATH: barrier, then rank 0 saves (atomically)
//
// The verdict (the same on every rank) is PASS when
//   1. equivalence: kEquivalenceSteps steps of N ranks with batch B each give the same
//      parameters as one process with batch N*B on the same examples (computed on every
//      rank, serially, from the same starting state), within equivalence_tolerance(o)
//      (for a sync whose exact() is false, compressed gradients: printed, not required);
//   2. every rank ends with bit-identical parameters;
//   3. the best test accuracy within lesson 07's 3 epochs reaches 85% (--target).
//
// What this is not: a launcher (the driver is, driver.h) or an evaluation harness for
// other models; it trains lesson 07's MLP on an MNIST-format data set.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "data_loader.h"
#include "dataset.h"
#include "driver.h"
#include "gradient_sync.h"
#include "mnist.h"
#include "module.h"
#include "optimizer.h"
#include "process_group.h"
#include "sequential.h"
#include "trainer.h"
#include "training_data.h"
#include "training_options.h"

namespace course {

constexpr double kTargetAccuracy = 0.85;  ///< lesson 07's target, the default of --target
constexpr int kTargetEpochs = 3;

/// Lesson 07's flags, with --batch-size per rank, plus --init, --checkpoint, --no-shuffle
/// and --target. From TrainingOptions: --device and the optimizer flags; from DataOptions:
/// --data, --epochs, --batch-size, --hidden, --seed and --limit.
struct DdpTrainingOptions : TrainingOptions, DataOptions {
  DdpTrainingOptions() { batch_size = 64; }  ///< per rank: the global batch is np * batch_size
  int local_rank = 0;      ///< set by the driver (LOCAL_RANK): the GPU of --device cuda
  std::string init;        ///< safetensors state dict rank 0 starts from ("" : random)
  std::string checkpoint;  ///< where rank 0 writes the final state dict ("" : nowhere)
  bool shuffle = true;
  bool quiet = false;           ///< no progress lines, only the verdict (tests)
  bool detect_anomaly = false;  ///< --detect-anomaly: stop at the first non-finite gradient
  /// --target: the best test accuracy within kTargetEpochs epochs that PASS needs (0..1).
  /// Lower it for a short run (--epochs 1, --limit) that shows something else.
  double target = kTargetAccuracy;
};

constexpr int kEquivalenceSteps = 3;
/// Largest |DDP - serial| allowed over every parameter element after kEquivalenceSteps
/// steps. The two sum the same per-example gradients in different orders (per rank, then
/// across ranks), so float32 rounding differs in the last bits of each gradient.
///   SGD: the update is lr * g, so the parameters differ by about lr * 1e-7 * |g|; 1e-5
///        is far above that and far below what a wrong average (a sum, or one rank's
///        gradient alone) moves a parameter.
///   Adam: the update lr * m / (sqrt(v) + eps) divides by the gradient's own size, so an
///        element whose true gradient is within rounding of zero can move by a sizeable
///        part of lr in either direction (measured: up to 0.02 lr in 3 steps); lr / 4
///        allows for that, and a rank that skips the all-reduce still moves thousands of
///        elements by about lr. (Adam cannot tell a sum from a mean: it is scale-free.)
double equivalence_tolerance(const DdpTrainingOptions& o);

/// Training and test sets, standardised with the training set's statistics (the same on
/// every rank), the first o.limit training examples when o.limit > 0 (training_data.h).
using DdpData = TrainingData;
/// load_training_data(o.data, o.limit, o.hidden).
DdpData load_ddp_data(const DdpTrainingOptions& o);

/// make_mlp(sizes) seeded with o.seed + rank, so ranks start different until DDP
/// broadcasts; with o.init set, rank 0 loads that state dict (weights only).
std::shared_ptr<Sequential> make_ddp_model(const DdpTrainingOptions& o,
                                           const std::vector<int64_t>& sizes, int rank);

/// SGD with momentum (lr default 0.05) or Adam (lr default 1e-3), as lesson 07.
std::unique_ptr<Optimizer> make_ddp_optimizer(const DdpTrainingOptions& o,
                                              std::vector<Variable> params);

/// Where one step's time went on this rank.
struct DdpStepTimes {
  double compute = 0;          ///< forward, loss, backward, optimizer (less in_backward's parts)
  double sync = 0;             ///< inside prepare_for_backward and finish_backward
  InBackwardSync in_backward;  ///< inside backward (GradientSync::in_backward_sync)
  bool has_in_backward = false;
  /// Everything spent on synchronisation: sync plus the parts inside backward.
  double all_sync() const {
    return sync + in_backward.hooks + in_backward.wait + in_backward.copy_back;
  }
  /// Adds another step's times (for an epoch's totals).
  void add(const DdpStepTimes& other);
};

/// "gradient sync 24.1%" of compute + sync; when part of it ran inside backward, where:
/// "gradient sync 24.1% (after backward 0.0%, in backward: hooks 9.8%, exposed wait 11.0%,
/// copy back 3.3%)".
std::string describe_sync_share(const DdpStepTimes& totals);

/// One step: zero_grad, forward, cross-entropy, prepare_for_backward, backward,
/// finish_backward, optimizer.step(). `times` (optional) receives the split.
StepResult ddp_train_step(Module& model, Optimizer& optimizer, GradientSync& sync,
                          const Batch& batch, DdpStepTimes* times = nullptr);

/// The flags every rank must agree on (check_same_flags, flag_agreement.h): "--lr" -> "0.05",
/// "--hidden" -> "512 512", ... (not --data, a path that may differ between machines).
std::map<std::string, std::string> ddp_training_flag_values(const DdpTrainingOptions& o);

/// Stops training at the first non-finite value, as torch.autograd.detect_anomaly helps to:
/// throws Error "the loss is nan at step 12 (epoch 2) on rank 1 ..." when `loss` is NaN or
/// infinite, and, with `detect_anomaly`, "the gradient of '0.weight' holds inf at element
/// 5 at step 12 (epoch 2) on rank 1 ..." for the first parameter (in named_parameters()
/// order) whose gradient is. Call it after each step; `step` counts from 0 over the run.
void check_finite_step(const Module& model, float loss, bool detect_anomaly, int rank, int epoch,
                       int64_t step);

/// The examples of step `step` of epoch `epoch` across all ranks: the union of every rank's
/// batch, in rank order (what one process with batch N*B trains on at that step).
Batch global_batch(const Dataset& data, int world, int64_t batch_per_rank, bool shuffle,
                   uint64_t seed, int64_t epoch, int64_t step);

/// Largest |a - b| over two state dicts with the same names and shapes.
double max_abs_difference(const NamedTensors& a, const NamedTensors& b);

/// Check 1 of the verdict: returns the largest parameter difference between
/// `steps` DDP steps (model wrapped by make_sync, per-rank batch o.batch_size) and the same
/// steps run serially with batch world * o.batch_size, both from rank 0's starting state.
double check_equivalence(const DdpTrainingOptions& o, const DdpData& data, ProcessGroup& pg,
                         const SyncFactory& make_sync, int steps = kEquivalenceSteps);

/// Check 2: "" when every rank's parameters and buffers equal rank 0's bit for bit, else
/// what differs on which rank (the same text on every rank), "... differ from rank 0's "
/// followed by `when`, then the first differing element of the lowest such rank.
std::string check_identical_across_ranks(const Module& model, ProcessGroup& pg,
                                         const std::string& when = "after training");
/// The same over a state dict (lesson 13's sharded model: its full_state_dict()).
/// REQUIRES: the same names and sizes on every rank (collective).
std::string check_identical_across_ranks(const NamedTensors& state, ProcessGroup& pg,
                                         const std::string& when = "after training");

/// The whole run described at the top of this file; `out` gets rank 0's progress.
Verdict run_ddp_training(const DdpTrainingOptions& o, ProcessGroup& pg,
                         const SyncFactory& make_sync, std::ostream& out);

}  // namespace course
