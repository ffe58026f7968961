// pp_bench.h: lesson 16, given: ./lesson16 --bench, the bubble and the activation memory of
// GPipe and 1F1B measured against their models, and both schedules' timelines.
//
//   ./lesson16 --bench --np 4                  # P = 4 on loopback
//   ./lesson16 --bench --np 4 --link 10gbit    # every send paced at 10 Gbit/s
//
// THE MODEL, P stages, M micro-batches, every forward costing f and every backward b on
// every stage, messages free: stage s starts its first forward s*f late and finishes its
// last backward (P-1-s)*b early, so each stage idles (P-1)(f+b) of a step that lasts
// (M+P-1)(f+b):
//
//   bubble fraction = (P-1) / (M+P-1)          the same for GPipe and 1F1B
//
// 1F1B changes memory, not the bubble: stage s holds at most P-s micro-batches'
// activations, GPipe M.
//
// THE TABLE, one row per schedule and M (M in 1, 2, 4, 8, 16; the global batch fixed, so a
// micro-batch has batch/M rows), after warm-up steps, per stage the median of the timed
// steps, which run back to back as in training (a stage that ends early waits at the
// start of the next step, so every stage's iteration lasts the pipeline's period):
//   step ms       the slowest stage's iteration: zero_grad, the schedule, the optimizer
//   compute ms    the stages' mean forward and backward time per step
//   wait %        the stages' mean time blocked on receives, of the iteration: the bubble
//                 as the stages saw it
//   idle %        the iteration less compute, of the iteration, mean over stages (waits,
//                 sends, the optimizer)
//   model %       (P-1)/(M+P-1)
//   in flight     the most micro-batches any stage held at once
//   act MiB       stage 0's peak saved activations (StageModule::saved_bytes, summed
//                 over the micro-batches in flight)
//   speed-up      one process's step on the whole batch (rank 0, measured first) / step ms
// and a timeline of one step of each schedule at M = 8 (Perfetto JSON and SVG, one row per
// stage: forwards blue, backwards green, waits grey). Then the same table on MODELLED
// compute: a tiny model whose every forward sleeps f = 2 ms and every backward 2f
// (StagePlacement::modelled_forward_ms), so that stages sharing the machine's cores do
// not slow each other and the schedule alone decides who waits: the bubble as a cluster
// with a core per stage would see it. Then the balance: the cut by
// parameters against the cut by measured layer time, each running 1F1B at M = 8: the
// stages' compute per step, slowest over mean, and the step.
//
// What this is not: a measurement of a cluster: on one machine the stages share its cores
// (docs/bench/lesson16.md says what that does to the bubble).
#pragma once

#include <ostream>
#include <string>

#include "device_mesh.h"
#include "driver.h"

namespace course {

struct PipelineBenchOptions {
  int64_t batch = 256;  ///< the global batch, cut into M micro-batches
  int64_t width = 512;  ///< hidden width
  int layers = 8;       ///< hidden layers
  int steps = 10;       ///< timed steps per row (after 2 warm-up steps)
  std::string csv_path = "bench-results/lesson16_pipeline.csv";
  std::string trace_prefix = "bench-results/lesson16_timeline";  ///< + _gpipe.svg, ...
};

/// The table and the timelines; rank 0 prints and writes them. Collective over the mesh,
/// one pipeline of every rank (P = mesh.size("pp"), D = 1: init_pipeline_mesh(world, 0),
/// stage_runner.h; ConfigError for D > 1). PASS when every row ran; the figures are for
/// reading.
Verdict run_pipeline_bench(const DeviceMesh& mesh, const PipelineBenchOptions& o,
                           std::ostream& out);

}  // namespace course
