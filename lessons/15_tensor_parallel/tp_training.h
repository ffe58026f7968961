// tp_training.h: lesson 15, given: training the tensor-parallel model on Fashion-MNIST,
// alone (T = N) or on a 2D grid of D data-parallel replicas of T ranks each (N = D x T).
//
//   TpTrainingOptions o;                       // lesson 09's flags, --tp, --blocks, --hidden H
//   DeviceMesh mesh = init_device_mesh(subgroups, tp_mesh_dims(world.size(), o.tp));
//   Verdict v = run_tp_training(o, mesh, world, std::cout);   // ./lesson15 --np 4 --tp 2
//
// THE MESH (common's device_mesh.h, torch's init_device_mesh("cpu", (D, T),
// mesh_dim_names=("dp", "tp"))): rank r = dp * T + tp, TP the inner dimension:
//
//              tp 0      tp 1        N = 4, T = 2, D = 2
//   dp 0      rank 0    rank 1     <- mesh.group("tp"): one model, split
//   dp 1      rank 2    rank 3     <- another replica of it
//               ^ mesh.group("dp"): the same shard in every replica; lesson 10's Reducer
//                 averages its gradients (not built when mesh.size("dp") == 1)
//
// Every rank of a tensor-parallel group trains on the same batch (the layer's input must
// really be replicated); the D replicas share the data as lesson 09's DistributedSampler
// with D replicas and rank mesh.coordinate("dp"). The world group (whose ranks are the
// mesh's ranks) serves the world's collectives: the equivalence's maximum, the replicas'
// comparison, the checkpoint's barrier.
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
//      from the same initialisation, within tp_tolerance(o) (tp_equivalence.h);
//   2. every replica holds the same full model, bit for bit;
//   3. the best test accuracy within lesson 07's 3 epochs reaches --target (85%).
// --checkpoint PATH: the full state dict with the unsharded names (SerialMlp's), written
// by rank 0; --init PATH: every rank cuts its shards from that file.
#pragma once

#include <memory>
#include <ostream>

#include "data_loader.h"
#include "ddp_training.h"
#include "device_mesh.h"
#include "driver.h"
#include "gradient_sync.h"
#include "optimizer.h"
#include "process_group.h"
#include "tp_model.h"

namespace course {

/// ./lesson15's options: lesson 09's, one --hidden width (128), --tp and --blocks.
struct TpTrainingOptions : DdpTrainingOptions {
  TpTrainingOptions() { hidden = {128}; }
  int tp = 0;      ///< --tp: ranks per tensor-parallel group (0: all of them)
  int blocks = 2;  ///< --blocks: K residual MLP blocks
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

/// Lesson 10's DDP (the Reducer) over mesh.group("dp"), averaging each shard's gradient
/// over the D replicas that hold it; null when mesh.size("dp") == 1. Collective over the
/// DP group (its construction broadcasts the shards from the group's first rank).
std::unique_ptr<GradientSync> make_tp_dp_sync(Module& model, const DeviceMesh& mesh);

/// ./lesson15's training run (see the top of this file) on `mesh` ({"dp", D}, {"tp", T});
/// `world`: the world group, for the world's collectives.
Verdict run_tp_training(const TpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& world,
                        std::ostream& out);

}  // namespace course
