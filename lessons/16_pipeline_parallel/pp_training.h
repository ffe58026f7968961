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
// THE TRAINING RUN (run_pipeline_training): every rank loads the data set and draws the
// same shuffled batches (RandomSampler, seed); stage 0 reads the inputs, the last stage the
// labels; each batch is cut into M micro-batches of batch/M rows (drop_last: every
// micro-batch has the same shape). Per step: zero_grad, the schedule, optimizer.step on
// the stage's own parameters. After each epoch the test set flows through the stages
// forward only (evaluate_pipeline) and the last stage counts the correct answers. PASS:
// the best test accuracy within the epochs reaches --target (lesson 07's 85%).
//
// What this is not: pipeline x data parallelism with gradients averaged across replicas
// (that needs a data-parallel subgroup per stage); with D > 1 each replica trains alone.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "data_loader.h"
#include "ddp_training.h"
#include "pipeline_executor.h"
#include "pipeline_stage.h"
#include "schedule.h"

namespace course {

/// ./lesson16's flags: lesson 09's training flags (--batch-size is one replica's batch),
/// plus the pipeline's.
struct PipelineOptions : DdpTrainingOptions {
  PipelineOptions() {
    batch_size = 128;
    hidden = std::vector<int64_t>(8, 256);
    lr = 0.05f;
  }
  int pp = 0;             ///< stages per pipeline (0: every rank, D = 1)
  int micro_batches = 4;  ///< M: micro-batches per batch
  std::string schedule = "1f1b";
  std::string balance = "params";  ///< partition by "params" or measured "time"
};

/// "" when the flags fit `np` ranks, else the usage error naming the numbers: --pp larger
/// than the model's layers, --pp not dividing the ranks, --micro-batches not dividing the
/// batch.
std::string check_pipeline_flags(const PipelineOptions& o, int np);

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
  StageRunner(ProcessGroup& group, const PipelineLayout& layout, const std::vector<int64_t>& sizes,
              uint64_t seed, const std::string& schedule, int micro_batches,
              int64_t micro_batch_rows, const std::vector<int>& bounds);

  /// One step: cuts `batch` (M * rows rows; stage 0 uses its inputs, the last stage its
  /// targets) into micro-batches and runs this stage's list.
  StepStats step(const Batch& batch, TraceRecorder* trace = nullptr);

  PipelineStage& stage() { return *stage_; }
  const PipelineLayout& layout() const { return layout_; }
  const PipelineSchedule& schedule() const { return schedule_; }

 private:
  PipelineLayout layout_;
  int micro_batches_;
  int64_t rows_;
  std::unique_ptr<PipelineStage> stage_;
  std::unique_ptr<PipelineExecutor> executor_;
  PipelineSchedule schedule_;
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

/// ./lesson16's training run (see above).
Verdict run_pipeline_training(const PipelineOptions& o, ProcessGroup& group, std::ostream& out);

}  // namespace course
