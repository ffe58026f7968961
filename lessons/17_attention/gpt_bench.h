// gpt_bench.h: lesson 17, given: ./lesson17 --bench, naive against tiled attention (time
// and the bytes kept for backward, measured against their formulas), then the GPT's
// training step (tokens/s and achieved FLOP/s against this machine's matmul rate).
//
//   ./lesson17 --bench                          # both tables, CSV and SVG in bench-results/
//
// TABLE 1, ATTENTION, one row per kind and S (S in 64, 128, 256, 512, 1024; B x heads
// problems of head dimension d, causal), the median of several runs of the kernels of
// attention.h:
//   fwd ms, bwd ms    the forward, and the backward from a given dout
//   saved B           the bytes causal_self_attention's node keeps for backward, counted
//                     by the saved-tensor ledger (saved_tensors.h) from its output
//   formula B         what this file derives (4-byte floats, n = B heads):
//                       naive  4 n S d (q, k, v) x 3 + 4 n S S (P)
//                       tiled  4 n S d (q, k, v, o) x 4 + 4 n S (lse)
//   per-row B         the S-dependent part alone: P's 4 n S S against lse's 4 n S, and
//                     its ratio naive / tiled (= S)
// The verdict FAILs when a ledger count differs from its formula by a byte.
//
// TABLE 2, TRAINING, one row per kind: the GPT of gpt.h (AdamW, clipped), B x S tokens a
// step, the median step after a warm-up, tokens/s, and the achieved FLOP/s in PaLM's
// accounting (Chowdhery et al., 2022, appendix B; the README derives it):
//   flops per token = 6 N' + 12 L S H      N' the parameters met in a matrix product (all
//                                          but wte and wpe, which are lookups), L layers;
//                                          the full S x S counted, no recomputation
// against the rate of a square sgemm (tensor_ops.h's gemm, n = 4 H) measured in the same
// run, just before each row (a shared machine moves both), one BLAS thread throughout.
//
// TABLE 3, MEMORY: what the training step's graph keeps for backward, by node, naive beside
// tiled (the ledger from the loss): where the model's activation memory goes.
//
// What this is not: FlashAttention's speed. On a CPU both kernels read their operands
// from cache; what the tiled kernel saves here is memory (the S x S matrix), not time.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "driver.h"

namespace course {

/// What ./lesson17 --bench measures, and where it writes its files.
struct GptBenchOptions {
  std::vector<int64_t> seq_lens = {64, 128, 256, 512, 1024};  ///< table 1's S
  int64_t batch = 1;                                          ///< table 1's B
  int64_t heads = 4;                                          ///< table 1's heads
  int64_t head_dim = 16;                                      ///< table 1's d
  int repeats = 7;           ///< timed runs per row of table 1 (after one warm-up)
  int64_t train_batch = 16;  ///< table 2's B
  int64_t train_seq = 64;    ///< table 2's S (the model's context)
  int64_t layers = 2;        ///< table 2's L
  int64_t hidden = 64;       ///< table 2's H
  int64_t train_heads = 4;   ///< table 2's heads
  int64_t vocab = 96;        ///< table 2's V (random tokens: the step's cost; tools/torch_gpt.py's)
  int train_steps = 10;      ///< timed steps per row of table 2 (after one warm-up)
  /// --csv: the tables go beside it, named after it (lesson17_attention.csv, ...); its
  /// folder is made when missing
  std::string csv_path = "bench-results/lesson17.csv";
};

/// One row of table 1's memory columns: the bytes one attention layer keeps for backward.
struct AttentionSavedBytes {
  int64_t ledger = 0;   ///< counted by saved_tensor_ledger from the op's output
  int64_t formula = 0;  ///< the formula at the top of this file
};

/// The formula at the top of this file for one layer: `tiled` false is naive attention.
int64_t attention_saved_bytes_formula(bool tiled, int64_t batch_heads, int64_t seq,
                                      int64_t head_dim);

/// Runs causal_self_attention once on [batch, heads, seq, head_dim] inputs that require
/// grad and counts its output's saved tensors; with the formula beside it.
AttentionSavedBytes measure_attention_saved_bytes(bool tiled, int64_t batch, int64_t heads,
                                                  int64_t seq, int64_t head_dim);

/// The tables (see the top of this file), printed to `out` and written beside o.csv_path
/// (output_beside): with the default, bench-results/lesson17_attention.csv,
/// lesson17_training.csv, lesson17_saved.csv and lesson17_attention.svg.
/// PASS when every ledger count equals its formula.
Verdict run_gpt_bench(const GptBenchOptions& o, std::ostream& out);

}  // namespace course
