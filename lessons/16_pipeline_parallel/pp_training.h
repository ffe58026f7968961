// pp_training.h: lesson 16, given: a pipeline on a group of ranks: where each rank sits,
// one training step of a stage (micro-batches through the schedule), the comparison with
// one process on the whole batch, and ./lesson16's training run on Fashion-MNIST.
//
//   PipelineLayout layout = make_pipeline_layout(group.rank(), group.size(), /*pp=*/4);
//   StageRunner runner(group, layout, sizes, seed, "1f1b", /*micro_batches=*/8, rows, bounds);
//   StepStats st = runner.step(batch);        // every stage; gradients accumulated
//   optimizer.step();
//
// LAYOUT. N = P x D ranks: D replicas of a P-stage pipeline, world rank = replica * P +
// stage (the stage is the inner dimension, so a pipeline's neighbours are neighbouring
// ranks). Stage s of replica d receives from rank d*P + s-1 and sends to d*P + s+1.
//
// THE TRAINING RUN (run_pipeline_training): every rank loads the data set; the ranks of one
// replica draw the same shuffled share of it (lesson 09's DistributedSampler over the D
// replicas); stage 0 reads the inputs, the last stage the labels; each replica's batch
// (--batch-size / D) is cut into M micro-batches (drop_last: every micro-batch has the
// same shape). Per step: zero_grad, the schedule, the average over replicas (D > 1),
// optimizer.step on the stage's own parameters. After each epoch the test set flows
// through the stages forward only (evaluate_pipeline) and the last stage counts the correct
// answers. PASS: the best test accuracy within the epochs reaches --target (lesson 07's
// 85%). --init and --checkpoint read and write the whole model under one process's names
// (pp_checkpoint.h).
//
// PIPELINE x DATA PARALLELISM. With D > 1 replicas, stage s of every replica forms a
// data-parallel group (the "dp" dimension of the device mesh {dp: D, pp: P}, device_mesh.h):
// after the schedule, each stage's gradients are averaged over it (lesson 09's NaiveDdp,
// one flat all-reduce), so the D replicas step alike: one pipeline on a batch D times as
// large. The p2p messages run on the world group, between neighbouring ranks.
//
// What this is not: the data-parallel all-reduce overlapped with the last micro-batch's
// backward (Megatron's overlap_grad_reduce, lesson 10's Reducer with no_sync on the first
// M-1 micro-batches); here it follows the schedule.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "data_loader.h"
#include "ddp_training.h"
#include "naive_ddp.h"
#include "pipeline_executor.h"
#include "pipeline_stage.h"
#include "schedule.h"

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

/// "" when the flags fit `np` ranks, else the usage error naming the numbers: --pp larger
/// than the model's layers, --pp not dividing the ranks, --micro-batches not dividing a
/// replica's share of the batch (--batch-size / D), a --limit that leaves an epoch no
/// whole batch (zero_steps_problem).
std::string check_pipeline_flags(const PipelineOptions& o, int np);

/// "" when `examples` training examples give each of `replicas` replicas at least one
/// whole batch of batch_size / replicas rows (the loader drops a shorter last one); else
/// the problem naming the sizes ("an epoch would train zero steps: 100 training examples
/// are fewer than one batch (--batch-size 128) ...").
std::string zero_steps_problem(int64_t examples, int replicas, int64_t batch_size);

/// Where a rank sits (see LAYOUT above).
struct PipelineLayout {
  int stages = 1;    ///< P
  int replicas = 1;  ///< D
  int stage = 0;
  int replica = 0;
  int prev_rank = -1;  ///< -1 on stage 0
  int next_rank = -1;  ///< -1 on the last stage
};

/// REQUIRES: pp divides world (pp 0: pp = world). ConfigError otherwise.
PipelineLayout make_pipeline_layout(int rank, int world, int pp);

/// One rank's stage of a pipeline, its executor and its list of actions.
class StageRunner {
 public:
  /// Builds layers [bounds[stage], bounds[stage+1]) of the MLP `sizes` drawn from `seed`,
  /// agrees shapes with the neighbours, builds the schedule and checks it (every rank
  /// checks the whole schedule, so a bad one is refused before any message is sent).
  /// `dp_group`: this stage's data-parallel group (D > 1), whose gradients step() averages;
  /// null: none. It must outlive the runner.
  StageRunner(ProcessGroup& group, const PipelineLayout& layout, const std::vector<int64_t>& sizes,
              uint64_t seed, const std::string& schedule, int micro_batches,
              int64_t micro_batch_rows, const std::vector<int>& bounds,
              ProcessGroup* dp_group = nullptr);

  /// One step: cuts `batch` (M * rows rows; stage 0 uses its inputs, the last stage its
  /// targets) into micro-batches and runs this stage's list; with a dp group, then averages
  /// the gradients over it (timed in StepStats::send_s).
  StepStats step(const Batch& batch, TraceRecorder* trace = nullptr);

  PipelineStage& stage() { return *stage_; }
  PipelineExecutor& executor() { return *executor_; }
  const PipelineLayout& layout() const { return layout_; }
  const PipelineSchedule& schedule() const { return schedule_; }

 private:
  PipelineLayout layout_;
  int micro_batches_;
  int64_t rows_;
  std::unique_ptr<PipelineStage> stage_;
  std::unique_ptr<PipelineExecutor> executor_;
  PipelineSchedule schedule_;
  std::unique_ptr<NaiveDdp> data_parallel_;
};

/// What compare_with_one_process runs.
struct EquivalenceCase {
  std::vector<int64_t> sizes = {24, 20, 18, 16, 14, 12, 10};
  std::string schedule = "1f1b";
  int micro_batches = 4;
  int64_t micro_batch_rows = 3;
  int steps = 20;
  float lr = 0.05f;
  uint64_t seed = 5;
};

/// Largest |pipeline - one process| over this stage's parameters after c.steps SGD steps
/// of both from the same initialisation, on the same synthetic batches (values depending
/// on step, row and column; M * rows rows per step). The pipeline is the whole group (P =
/// group.size(), stages balanced by parameters); one process trains make_mlp(sizes) on
/// each whole batch with the mean loss. Collective: the largest difference over the
/// ranks, the same value on every rank.
double compare_with_one_process(ProcessGroup& group, const EquivalenceCase& c);

/// The test set through the pipeline, forward only, in batches of `rows`: the fraction
/// the last stage classifies correctly, the same value on every rank of the replica's
/// pipeline (sent from the last stage). Collective over the pipeline's ranks.
double evaluate_pipeline(ProcessGroup& group, const PipelineLayout& layout, PipelineStage& stage,
                         const Dataset& test, int64_t rows);

/// Largest |pipeline x data parallel - one process| after c.steps SGD steps, as
/// compare_with_one_process, on P = group.size() / dp_group->size() stages and D =
/// dp_group->size() replicas: replica d takes rows [d*M*b, (d+1)*M*b) of each batch of D*M*b
/// rows, one process the whole batch. `dp_group`: this stage's group of replicas (ranks
/// stage, P + stage, ...). Collective over the world.
double compare_pp_dp_with_one_process(ProcessGroup& group, ProcessGroup& dp_group,
                                      const EquivalenceCase& c);

/// ./lesson16's training run (see above). `dp_group`: this stage's group of replicas when
/// D > 1 (null otherwise).
Verdict run_pipeline_training(const PipelineOptions& o, ProcessGroup& group, ProcessGroup* dp_group,
                              std::ostream& out);

}  // namespace course
