// tp_training.h: lesson 15, given: training the tensor-parallel model on Fashion-MNIST,
// alone (T = N) or on a 2D grid of D data-parallel replicas of T ranks each (N = D x T).
//
//   TpTrainingOptions o;                       // lesson 09's flags, --tp, --blocks, --hidden H
//   TpGrid grid = make_tp_grid(world, rank, o.tp);      // the layout, torch's init_device_mesh
//   Verdict v = run_tp_training(o, groups, std::cout);  // ./lesson15 --np 4 --tp 2
//
// THE GRID. Rank r = dp_index * T + tp_index (TP the inner dimension, as
// init_device_mesh("cpu", (D, T), mesh_dim_names=("dp", "tp")) lays it out):
//
//              tp_index 0   tp_index 1        N = 4, T = 2, D = 2
//   dp_index 0   rank 0       rank 1     <- a tensor-parallel group: one model, split
//   dp_index 1   rank 2       rank 3     <- another replica of it
//                  ^ a data-parallel group: the same shard in every replica; lesson 10's
//                    Reducer averages its gradients
//
// Every rank of a tensor-parallel group trains on the same batch (the layer's input must
// really be replicated); the D replicas share the data as lesson 09's DistributedSampler
// with D replicas and rank dp_index.
//
// THE STEP (tp_train_step): zero_grad; logits_t = model(x); loss =
// vocab_parallel_cross_entropy; backward (the f/g all-reduces over the TP group); the DP
// group's gradient sync, if D > 1; optimizer.step() on this rank's shards (SGD and Adam
// act element by element, so a shard's update is the slice of the full update).
//
// MEMORY: after the first step rank 0 prints its model state by kind in lesson 13's
// MemoryLedger (parameters, gradients, optimizer state, counted from the tensors) beside
// the model, 16 bytes (Adam; 12 with SGD's momentum) per parameter of this rank, and the
// rest of the step's peak (Storage::peak_cpu_bytes: activations, the batch, temporaries).
//
// THE VERDICT (the same on every rank): PASS when
//   1. kTpEquivalenceSteps steps equal one process on the global batch (D x B examples)
//      from the same initialisation, within tp_tolerance(o);
//   2. every replica holds the same full model, bit for bit;
//   3. the best test accuracy within lesson 07's 3 epochs reaches --target (85%).
// --checkpoint PATH: the full state dict with the unsharded names (SerialMlp's), written
// by rank 0; --init PATH: every rank cuts its shards from that file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "data_loader.h"
#include "ddp_training.h"
#include "driver.h"
#include "gradient_sync.h"
#include "optimizer.h"
#include "process_group.h"
#include "tp_model.h"

namespace course {

struct TpTrainingOptions : DdpTrainingOptions {
  TpTrainingOptions() { hidden = {128}; }
  int tp = 0;      ///< --tp: ranks per tensor-parallel group (0: all of them)
  int blocks = 2;  ///< --blocks: K residual MLP blocks
};

/// Where a rank sits: r = dp_index * T + tp_index.
struct TpGrid {
  int T = 1, D = 1;
  int tp_index = 0, dp_index = 0;
};

/// "" when `tp` (0: world) divides `world` and `hidden` x 4 divides by it; else the usage
/// problem naming both numbers ("--tp 3 does not divide --np 4 ranks").
std::string tp_usage_problem(int world, int tp, int64_t hidden);

/// ./lesson15's flags, checked before any rank starts (a usage error, exit 64): --hidden
/// takes one size, the blocks' width H ("--hidden 128 128" is refused), then
/// tp_usage_problem(world, o.tp, H). "" when they fit.
std::string tp_flags_problem(int world, const TpTrainingOptions& o);

/// The grid of `world` ranks at tensor-parallel size `tp` (0: world). REQUIRES: no
/// tp_usage_problem (ConfigError otherwise).
TpGrid make_tp_grid(int world, int rank, int tp);

/// The process groups of one rank: the world, its tensor-parallel group (size T) and its
/// data-parallel group (size D; null when D = 1).
struct TpGroups {
  ProcessGroup& world;
  ProcessGroup& tp;
  ProcessGroup* dp = nullptr;
  TpGrid grid;
};

/// The model's shape from the flags: H = o.hidden[0], K = o.blocks, 784 inputs, 10 classes.
ModelShape tp_model_shape(const TpTrainingOptions& o);

/// The full initialisation every rank cuts its shards from: o.init's file, or SerialMlp
/// seeded with o.seed (the same on every rank).
NamedTensors tp_initial_state(const TpTrainingOptions& o, const ModelShape& shape);

/// One step on `batch` (the same on every rank of the TP group). `dp_sync`: the
/// data-parallel gradient sync (lesson 10's Reducer), or null when D = 1. Returns the
/// loss and how many examples the model got right (before the update).
StepResult tp_train_step(TensorParallelMlp& model, Optimizer& optimizer, GradientSync* dp_sync,
                         const Batch& batch);

/// The model state a rank holds, in bytes, counted from its tensors: parameters, their
/// gradients (those defined) and the optimizer's state tensors.
struct ModelStateBytes {
  int64_t parameters = 0, gradients = 0, optimizer = 0;
  int64_t total() const { return parameters + gradients + optimizer; }
};
ModelStateBytes model_state_bytes(const Module& model, const Optimizer& optimizer);

/// Lesson 10's DDP (the Reducer) over the data-parallel group, averaging each shard's
/// gradient over the D replicas that hold it; null when D = 1. Collective over the DP
/// group (its construction broadcasts the shards from the group's first rank).
std::unique_ptr<GradientSync> make_tp_dp_sync(Module& model, TpGroups& groups);

constexpr int kTpEquivalenceSteps = 3;

/// Largest |TP - serial| over every parameter after one step per batch of
/// `global_batches` (each D x B examples, replica d training on rows [d*B, d*B + B)),
/// from `init`: the serial model on the whole batch, the TP model on the grid. Collective
/// over every group; the same on every rank.
double tp_equivalence_difference(const TpTrainingOptions& o, const ModelShape& shape,
                                 const NamedTensors& init, const std::vector<Batch>& global_batches,
                                 TpGroups& groups);

/// The tolerance of that comparison: lesson 09's equivalence_tolerance (1e-5 for SGD,
/// lr / 4 for Adam). The TP model sums each product over the ranks' slices, in another
/// order than the serial one, so float32 rounding differs in the last bits.
double tp_tolerance(const TpTrainingOptions& o);

/// The flags every rank must agree on (lesson 09's, --tp and --blocks): the driver checks
/// them (check_same_flags) on the world group before it makes the grid's subgroups.
std::map<std::string, std::string> tp_training_flag_values(const TpTrainingOptions& o);

/// ./lesson15's training run (see the top of this file).
Verdict run_tp_training(const TpTrainingOptions& o, TpGroups& groups, std::ostream& out);

}  // namespace course
