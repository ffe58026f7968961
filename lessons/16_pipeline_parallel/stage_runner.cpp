// stage_runner.cpp: see stage_runner.h.
#include "stage_runner.h"

namespace course {

DeviceMesh init_pipeline_mesh(Subgroups& world, int pp) {
  const int stages = pp == 0 ? world.world() : pp;
  return init_device_mesh(world, {{"dp", world.world() / stages}, {"pp", stages}});
}

StageRunner::StageRunner(const DeviceMesh& mesh, const std::vector<int64_t>& sizes, uint64_t seed,
                         const std::string& schedule, int micro_batches, int64_t micro_batch_rows,
                         const std::vector<int>& bounds)
    : stage_(mesh.coordinate("pp")),
      stages_(mesh.size("pp")),
      micro_batches_(micro_batches),
      rows_(micro_batch_rows),
      pp_group_(mesh.group("pp")),
      dp_group_(mesh.group("dp")) {
  schedule_ = make_schedule(schedule, stages_, micro_batches);
  check_schedule(schedule_, micro_batches);
  module_ = std::make_unique<StageModule>(sizes, seed, bounds.at(stage_), bounds.at(stage_ + 1));
  StagePlacement placement;
  placement.stage = stage_;
  placement.stages = stages_;
  placement.prev_rank = stage_ > 0 ? stage_ - 1 : -1;  // group rank = stage
  placement.next_rank = stage_ < stages_ - 1 ? stage_ + 1 : -1;
  placement.micro_batch_rows = micro_batch_rows;
  placement.world_ranks = mesh.group_ranks("pp");
  executor_ = std::make_unique<PipelineExecutor>(*module_, *pp_group_, placement);
  if (dp_group_->size() > 1) {
    data_parallel_ = std::make_unique<NaiveDdp>(*module_, *dp_group_, GradSync::flat);
  }
}

StepStats StageRunner::step(const Batch& batch, TraceRecorder* trace) {
  std::vector<Tensor> inputs, targets;
  for (int m = 0; m < micro_batches_; ++m) {
    if (stage_ == 0) inputs.push_back(batch.inputs.rows(m * rows_, rows_));
    if (stage_ == stages_ - 1) targets.push_back(batch.targets.rows(m * rows_, rows_));
  }
  StepStats st = executor_->run_step(schedule_[stage_], inputs, targets, trace);
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

}  // namespace course
