// stage_runner.h: lesson 16, given: one rank's stage of a pipeline on the device mesh
// {dp: D, pp: P} (device_mesh.h): its module, its executor, its schedule, and one training
// step (micro-batches through the schedule, then the average over the replicas).
//
//   Subgroups world(...);                                       // subgroups.h
//   DeviceMesh mesh = init_pipeline_mesh(world, /*pp=*/4);      // {dp: N / 4, pp: 4}
//   StageRunner runner(mesh, sizes, seed, "1f1b", /*micro_batches=*/8, rows, bounds);
//   StepStats st = runner.step(batch);        // every stage; gradients accumulated
//   optimizer.step();
//
// THE MESH is the only place ranks become coordinates. N = D x P ranks: D replicas of a
// P-stage pipeline, world rank = replica * P + stage (torch's row-major layout, the stage
// the inner dimension, so a pipeline's neighbours are neighbouring ranks). This rank's
// stage is mesh.coordinate("pp"), its replica mesh.coordinate("dp"). Its messages go over
// mesh.group("pp"), where group rank = stage: stage s receives from group rank s - 1 and
// sends to s + 1, whatever the world ranks are. Errors name the world ranks
// (mesh.group_ranks("pp")).
//
// PIPELINE x DATA PARALLELISM. With D > 1 replicas, stage s of every replica forms the
// mesh's "dp" group: after the schedule, each stage's gradients are averaged over it
// (lesson 09's NaiveDdp, one flat all-reduce), so the D replicas step alike: one pipeline
// on a batch D times as large.
//
// What this is not: the data-parallel all-reduce overlapped with the last micro-batch's
// backward (Megatron's overlap_grad_reduce, lesson 10's Reducer with no_sync on the first
// M-1 micro-batches); here it follows the schedule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data_loader.h"
#include "device_mesh.h"
#include "naive_ddp.h"
#include "pipeline_executor.h"
#include "schedule.h"
#include "stage_module.h"
#include "subgroups.h"

namespace course {

/// The pipeline's mesh {dp: world / pp, pp: pp} (pp 0: every rank a stage, D = 1).
/// Collective over the world (init_device_mesh). REQUIRES: pp divides the world (the
/// driver checks --pp first; init_device_mesh's ConfigError otherwise).
DeviceMesh init_pipeline_mesh(Subgroups& world, int pp);

/// One rank's stage of a pipeline, its executor and its list of actions.
class StageRunner {
 public:
  /// Builds layers [bounds[s], bounds[s+1]) of the MLP `sizes` drawn from `seed` (s =
  /// mesh.coordinate("pp")), agrees shapes with the neighbours over mesh.group("pp"),
  /// builds the schedule and checks it (every rank checks the whole schedule, so a bad one
  /// is refused before any message is sent). REQUIRES: `mesh` has the dimensions "dp" and
  /// "pp" (init_pipeline_mesh); its groups are shared with the runner.
  StageRunner(const DeviceMesh& mesh, const std::vector<int64_t>& sizes, uint64_t seed,
              const std::string& schedule, int micro_batches, int64_t micro_batch_rows,
              const std::vector<int>& bounds);

  /// One step: cuts `batch` (M * rows rows; stage 0 uses its inputs, the last stage its
  /// targets) into micro-batches and runs this stage's list; with D > 1, then averages
  /// the gradients over mesh.group("dp") (timed in StepStats::send_s).
  StepStats step(const Batch& batch, TraceRecorder* trace = nullptr);

  /// This stage's layers.
  StageModule& module() { return *module_; }
  /// The executor that runs this stage's list.
  PipelineExecutor& executor() { return *executor_; }
  /// s: this rank's stage (mesh.coordinate("pp")).
  int stage() const { return stage_; }
  /// P: the pipeline's stages (mesh.size("pp")).
  int stages() const { return stages_; }
  /// The whole schedule (every stage's list).
  const PipelineSchedule& schedule() const { return schedule_; }

 private:
  int stage_;
  int stages_;
  int micro_batches_;
  int64_t rows_;
  std::shared_ptr<ProcessGroup> pp_group_;
  std::shared_ptr<ProcessGroup> dp_group_;
  std::unique_ptr<StageModule> module_;
  std::unique_ptr<PipelineExecutor> executor_;
  PipelineSchedule schedule_;
  std::unique_ptr<NaiveDdp> data_parallel_;
};

}  // namespace course
