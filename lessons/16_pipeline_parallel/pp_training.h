// pp_training.h: lesson 16, given: ./lesson16's training run on Fashion-MNIST, its flags,
// and the test set through the pipeline.
//
//   DeviceMesh mesh = init_pipeline_mesh(world, o.pp);        // stage_runner.h
//   Verdict v = run_pipeline_training(o, mesh, std::cout);
//
// THE TRAINING RUN (run_pipeline_training): every rank loads the data set; the ranks of one
// replica draw the same shuffled share of it (lesson 09's DistributedSampler over the D
// replicas, replica d = mesh.coordinate("dp")); stage 0 reads the inputs, the last stage
// the labels; each replica's batch (--batch-size / D) is cut into M micro-batches
// (drop_last: every micro-batch has the same shape). Per step: zero_grad, the schedule, the
// average over replicas (D > 1), optimizer.step on the stage's own parameters
// (StageRunner, stage_runner.h). After each epoch the test set flows through the stages
// forward only (evaluate_pipeline) and the last stage counts the correct answers. PASS:
// the best test accuracy within the epochs reaches --target (lesson 07's 85%). --init and
// --checkpoint read and write the whole model under one process's names (pp_checkpoint.h).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "data_loader.h"
#include "ddp_training.h"
#include "device_mesh.h"
#include "stage_module.h"

namespace course {

/// ./lesson16's flags: lesson 07's data and optimizer flags (--batch-size is the batch of
/// all replicas together, Megatron's global batch: each of the D replicas takes 1/D of it),
/// plus the pipeline's. The deep default MLP (8 x 256) needs a fourth epoch to pass 85%.
struct PipelineOptions : DdpTrainingOptions {
  PipelineOptions() {
    batch_size = 128;
    hidden = std::vector<int64_t>(8, 256);
    epochs = 4;
  }
  int pp = 0;             ///< stages per pipeline (0: every rank, D = 1)
  int micro_batches = 4;  ///< M: micro-batches per batch
  std::string schedule = "1f1b";
  std::string balance = "params";  ///< partition by "params" or measured "time"
  /// Seconds a stage waits for a neighbour's message before naming it (0: the
  /// process-wide default, COURSE_TIMEOUT_S or 120 s).
  double receive_timeout_s = 0;
};

/// "" when the flags fit `np` ranks (the effective world: --np, or WORLD_SIZE for ranks
/// started by hand), else the usage error naming the numbers: --pp larger
/// than the model's layers, --pp not dividing the ranks, --micro-batches not dividing a
/// replica's share of the batch (--batch-size / D), a --limit that leaves an epoch no
/// whole batch (zero_steps_problem).
std::string check_pipeline_flags(const PipelineOptions& o, int np);

/// "" when `examples` training examples give each of `replicas` replicas at least one
/// whole batch of batch_size / replicas rows (the loader drops a shorter last one); else
/// the problem naming the sizes ("an epoch would train zero steps: 100 training examples
/// are fewer than one batch (--batch-size 128) ...").
std::string zero_steps_problem(int64_t examples, int replicas, int64_t batch_size);

/// The test set through the pipeline, forward only, in batches of `rows`, over
/// mesh.group("pp"): the fraction the last stage classifies correctly, the same value on
/// every stage of the replica's pipeline (sent from the last stage). Collective over the
/// pipeline's stages.
double evaluate_pipeline(const DeviceMesh& mesh, StageModule& module, const Dataset& test,
                         int64_t rows);

/// ./lesson16's training run (see above) on the mesh {dp: D, pp: P} (init_pipeline_mesh).
Verdict run_pipeline_training(const PipelineOptions& o, const DeviceMesh& mesh, std::ostream& out);

}  // namespace course
