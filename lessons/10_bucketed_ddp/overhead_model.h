// overhead_model.h: the README's cost model of bucketed DDP, fitted to one benchmark run
// (given code, used by ddp_bench.cpp).
//
// One all-reduce of b bytes costs o + b/w: a fixed cost per call o (measured as the
// all-reduce of one float) and a bandwidth w (from the all-reduce of every gradient,
// s bytes: w = s / (t_s - o)). Both are measured on the link the benchmark runs on, in the
// same run, so the prediction and the measurement share their machine and their load.
//
//   naive (c calls, after backward)   step ≈ compute + c·o + s/w        nothing hidden
//   bucketed (n_b buckets)            step ≈ compute + exposed
//     exposed ≈ n_b·o + s_last/w      the last bucket cannot hide (s_last = s/n_b when
//                                     the buckets are even: the README's n_b·o + s/(n_b·w))
//     but at least n_b·o + s/w - t_bwd: what does not fit under backward stays exposed
//     (t_bwd ≈ 2/3 of compute: backward costs about twice the forward)
//   no_sync K                         per micro-batch: compute + exposed / K
//
// What this is not: a simulator. It ignores the CPU the all-reduce itself takes from
// backward, which is the whole story on loopback (two ranks, one core each): there the
// prediction is the floor the machine cannot reach, and the gap is that CPU.
#pragma once

#include <cstdint>
#include <string>

namespace course {

struct OverheadModel {
  double compute = 0;  ///< seconds per step without communication
  double o = 0;        ///< seconds per all-reduce call
  double w = 0;        ///< bytes per second of an all-reduce's payload
  int64_t s = 0;       ///< bytes of every gradient together

  /// Seconds for one all-reduce of `bytes`.
  double all_reduce(int64_t bytes) const;
  /// Seconds per step with `calls` all-reduces after backward (naive DDP).
  double naive_step(int calls) const;
  /// Seconds per micro-batch with `buckets` buckets, the last one launched `last_bytes`,
  /// synchronising one micro-batch in `micro_batches`.
  double bucketed_step(int buckets, int64_t last_bytes, int micro_batches = 1) const;
  /// "model: o = 148 us per all-reduce, w = 860.5 MB/s of payload (s = 54.2 MiB, ...)".
  std::string describe() const;
};

/// Fits o and w: `compute` the compute-only step, `t_small` one all-reduce of one float,
/// `t_all` one all-reduce of all `s` bytes of gradients (seconds).
OverheadModel fit_overhead_model(double compute, double t_small, double t_all, int64_t s);

}  // namespace course
