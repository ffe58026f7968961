// ddp_trace.h: lesson 10, given: the driver's --trace, a few DDP training steps recorded on
// every rank and written by rank 0 as a Chrome trace and an SVG timeline.
//
//   ./lesson10 --np 2 --trace trace.json --trace-steps 3   # + trace.svg; open the JSON in
//                                                         # https://ui.perfetto.dev
//
// Every rank builds lesson 07's MLP in DDP with a TraceRecorder (trace_recorder.h) and
// trains steps + 1 steps on its rows of the real global batches; the first step builds
// the buckets the second rebuilds, so only the last `steps` are kept. Each rank's spans
// go to rank 0 over the group (trace_recorder.h's gather_spans), and rank 0 writes them
// all.
//
// What this is not: the lesson's trace tests (make grade-lesson10), which check the spans.
#pragma once

#include <ostream>
#include <string>

#include "ddp_training.h"
#include "process_group.h"
#include "reducer.h"

namespace course {

/// Collectively: records `steps` traced steps; rank 0 writes `path` (Chrome trace JSON)
/// and beside it the SVG (`path` with .json replaced by .svg) and says so on `out`.
/// `reducer.trace` is ignored (each rank records into its own TraceRecorder).
/// Throws SystemError when a file cannot be written.
void write_ddp_trace(const DdpTrainingOptions& o, const DdpData& data, ProcessGroup& pg,
                     ReducerOptions reducer, int steps, const std::string& path, std::ostream& out);

}  // namespace course
