// trace_recorder.h: lesson 10, a timeline of one rank's training steps, for Chrome's trace
// viewer (Perfetto, chrome://tracing) and for the SVG picture in the README (given code).
//
//   TraceRecorder trace(rank);
//   const double t0 = trace.now_us();
//   ... forward ...
//   trace.span(TraceRecorder::kCompute, "forward", t0, trace.now_us());
//
// Each rank records spans on two lanes, the way a GPU profile shows a compute stream and
// a communication stream: kCompute (forward, backward per layer, each gradient hook, the
// final wait, the optimizer) and kComm (each bucket's all-reduce from launch to
// completion). Times are microseconds of the steady clock, which every process on one
// machine shares, so the ranks' lanes line up.
//
// Shipping to rank 0: gather_spans() collects every rank's spans over the group (serialize()
// turns them into text, parse_spans() back), and write_chrome_trace() writes them as Chrome
// trace events, one process per rank ("rank 0", ...), threads "compute" and
// "communication". Lessons 10 and 16 gather their traces this one way.
//
// What this is not: a profiler; only what the code marks is recorded.
//
// Thread safety: span() and the accessors may be called from any thread (the reducer
// records a bucket's completion on a watcher thread).
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "process_group.h"

namespace course {

/// One finished interval on one lane of one rank.
struct TraceSpan {
  int lane = 0;      ///< TraceRecorder::kCompute or kComm
  std::string name;  ///< "forward", "backward 4", "all_reduce bucket 0", ...
  double start_us = 0;
  double end_us = 0;
  std::string detail;  ///< shown in the viewer's args ("3.1 MiB, 2 parameters")
};

class TraceRecorder {
 public:
  static constexpr int kCompute = 0;
  static constexpr int kComm = 1;

  explicit TraceRecorder(int rank) : rank_(rank) {}

  int rank() const { return rank_; }
  /// Microseconds on the steady clock (shared by the processes of one machine).
  static double now_us();

  /// Records a finished span. Names and details must not contain tabs or newlines.
  void span(int lane, std::string name, double start_us, double end_us, std::string detail = "");

  /// The start of the backward pass now running (the reducer draws each layer's backward
  /// from here to the layer's first gradient hook).
  void begin_backward() { backward_begin_us_ = now_us(); }
  double backward_begin_us() const { return backward_begin_us_; }

  /// Every span so far, in the order they were recorded.
  std::vector<TraceSpan> spans() const;
  void clear();

  /// One line per span: "lane\tstart\tend\tname\tdetail".
  std::string serialize() const;

 private:
  const int rank_;
  double backward_begin_us_ = 0;
  mutable std::mutex mutex_;
  std::vector<TraceSpan> spans_;
};

/// The spans that serialize() wrote. Throws ProtocolError on a malformed line.
std::vector<TraceSpan> parse_spans(const std::string& text);

/// Every rank's spans, on rank 0 of `group` (rank r's at index r; an empty list on the
/// other ranks). Collective: every rank of the group calls it. The texts travel as one
/// float per byte (a gather after an all-gather of their lengths), so any backend carries
/// them. Throws ProtocolError when a rank's text passes 16 MiB (floats count bytes exactly
/// only that far).
std::vector<std::vector<TraceSpan>> gather_spans(const TraceRecorder& trace, ProcessGroup& group);

/// Writes Chrome trace JSON ({"traceEvents": [...]}) with rank r's spans as process r,
/// lanes as threads "compute" and "communication", times relative to the earliest span.
/// Throws SystemError when the file cannot be written.
void write_chrome_trace(const std::string& path, const std::vector<std::vector<TraceSpan>>& ranks);

/// The same timeline as an SVG picture: one pair of lanes per rank, spans as boxes
/// (forward, backward, hooks, all-reduces and the optimizer in different colours).
void write_timeline_svg(const std::string& path, const std::vector<std::vector<TraceSpan>>& ranks,
                        const std::string& title);

}  // namespace course
