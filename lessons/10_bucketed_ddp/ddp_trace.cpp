// ddp_trace.cpp: lesson 10, given: a few traced DDP steps (see the header).
#include "ddp_trace.h"

#include <vector>

#include "distributed_data_parallel.h"
#include "ops.h"
#include "trace_recorder.h"

namespace course {
namespace {

// "trace.json" -> "trace.svg"; any other name gets ".svg" appended.
std::string svg_beside(const std::string& json_path) {
  const std::string ext = ".json";
  const bool is_json = json_path.size() > ext.size() &&
                       json_path.compare(json_path.size() - ext.size(), ext.size(), ext) == 0;
  return (is_json ? json_path.substr(0, json_path.size() - ext.size()) : json_path) + ".svg";
}

}  // namespace

void write_ddp_trace(const DdpTrainingOptions& o, const DdpData& data, ProcessGroup& pg,
                     ReducerOptions reducer, int steps, const std::string& path,
                     std::ostream& out) {
  const int world = pg.size(), rank = pg.rank();
  TraceRecorder trace(rank);
  reducer.trace = &trace;
  auto model = make_ddp_model(o, data.sizes, rank);
  DistributedDataParallel ddp(*model, pg, reducer);
  auto opt = make_ddp_optimizer(o, model->parameters());
  for (int step = 0; step <= steps; ++step) {
    if (step == 1) trace.clear();  // the first step builds the buckets that step 2 rebuilds
    const Batch all = global_batch(data.train, world, o.batch_size, o.shuffle, o.seed, 0, step);
    const Variable x(all.inputs.rows(rank * o.batch_size, o.batch_size));
    const Tensor y = all.targets.rows(rank * o.batch_size, o.batch_size);
    opt->zero_grad();
    Variable loss = cross_entropy(ddp.forward(x), y);
    trace.begin_backward();
    loss.backward();
    const double t0 = TraceRecorder::now_us();
    opt->step();
    trace.span(TraceRecorder::kCompute, "optimizer", t0, TraceRecorder::now_us());
  }
  const std::vector<std::vector<TraceSpan>> ranks = gather_spans(trace, pg);
  if (rank != 0) return;
  write_chrome_trace(path, ranks);
  const std::string svg = svg_beside(path);
  write_timeline_svg(svg, ranks,
                     "lesson 10: " + std::to_string(steps) + " steps on " + std::to_string(world) +
                         " ranks, " + ddp.describe());
  out << "trace: " << steps << " steps written to " << path
      << " (open it in https://ui.perfetto.dev) and " << svg << std::endl;
}

}  // namespace course
