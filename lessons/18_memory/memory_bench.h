// memory_bench.h: lesson 18, given: ./lesson18 --bench: where the GPT's memory goes and what
// recomputation and 16 bits buy, measured beside the formulas.
//
//   ./lesson18 --bench                              # the tables; CSV and SVG in bench-results/
//   ./lesson18 --bench --memory-budget 64           # table 4 under 64 MiB per rank
//
// TABLE 1, ACTIVATIONS: the ledger (activation_ledger.h's measurement) against the formula,
//   at several (B, S, H, heads), both attention kinds and every policy, in fp32 and bf16;
//   then S from 64 to 512 on one block: naive's bytes per token growing with S, tiled's flat.
// TABLE 2, MEMORY PER RANK: the model state of the bench's GPT (Ψ parameters) in fp32
//   (4Ψ parameters + 4Ψ gradients + 8Ψ Adam = 16Ψ) and mixed precision (2Ψ 16-bit
//   parameters + 2Ψ 16-bit gradients + 4Ψ float32 master + 8Ψ Adam = 16Ψ), counted from the
//   tensors of one real AdamW step; then the activations of each policy (measured) beside
//   them; then ZeRO's stages (lesson 13) on 1, 2 and 4 ranks, modelled: stage 1 shards the
//   master and Adam's state (12Ψ mixed, 8Ψ fp32), stage 2 the gradients too, stage 3 the
//   parameters too.
// TABLE 3, TIME: the training step (fp32, naive attention so that selective has an S² to
//   remove) with no, selective and full recomputation, beside the forward alone (no graph):
//   full against (forward + step), selective against none; at hidden H and 2H. Rounds
//   interleave the four (the forward, then each policy's step); the median of each.
// TABLE 4, BUDGET: for S in 64..512, the largest batch whose model state plus peak
//   activations (the formula's, activation_ledger.h's THE PEAK) fit --memory-budget, per
//   policy, fp32 and bf16: the trade recomputation offers. A budget that holds no batch at
//   the smallest S says the smallest budget that would.
// TABLE 5, FP16: of a trained model's gradient elements (nonzero in float32), the fraction
//   rounded to zero in fp16 unscaled and at the scale GradScaler starts from (2^16), and
//   the fraction that overflows there; then four short training runs (fp32, bf16, fp16 with
//   the GradScaler, fp16 unscaled) from one initialisation and batch order: their
//   validation losses, and the training curves drawn in lesson18_loss.svg.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "driver.h"
#include "gpt.h"
#include "precision.h"
#include "recompute_policy.h"

namespace course {

struct MemoryBenchOptions {
  int64_t layers = 2, heads = 4, hidden = 64;  ///< tables 2 to 5's model
  int64_t batch = 8, seq = 128;                ///< tables 2, 3 and 5's batch
  int64_t vocab = 96;                          ///< tables 1 to 4 (random-looking tokens)
  int steps = 9;  ///< table 3's timed rounds (each: the forward, then every policy's step)
  double memory_budget_mib = 64;  ///< table 4's budget per rank
  int64_t curve_steps = 150;      ///< table 5's runs
  std::string data;  ///< the fortunes corpus for table 5's runs ("" : lesson 17's default)
  /// --csv: the tables go beside it, named after it (lesson18_activations.csv, ...)
  std::string csv_path = "bench-results/lesson18.csv";
};

/// The largest batch of `seq` tokens (at most 1 << 20) whose model state (`state_bytes`)
/// plus peak activations under `policy` and `precision` fit `budget_bytes`; 0 when not
/// even one sequence fits.
int64_t largest_batch_within(int64_t budget_bytes, int64_t state_bytes, const GptConfig& c,
                             int64_t seq, RecomputePolicy policy, Precision precision);

/// Model-state bytes per rank for Ψ parameters with Adam: fp32 (4 + 4 + 8) Ψ, mixed
/// (2 + 2 + 4 + 8) Ψ, the part ZeRO `stage` shards (1: master and Adam; 2: + gradients;
/// 3: + parameters) divided by `world`.
int64_t zero_state_bytes(int64_t psi, Precision precision, int stage, int world);

/// The tables (see the top of this file), printed and written beside o.csv_path
/// (lesson18_activations.csv, lesson18_memory.csv, lesson18_time.csv, lesson18_budget.csv,
/// lesson18_fp16.csv, lesson18_loss.svg). PASS when every ledger count equals its formula.
Verdict run_memory_bench(const MemoryBenchOptions& o, std::ostream& out);

}  // namespace course
