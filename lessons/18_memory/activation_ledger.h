// activation_ledger.h: lesson 18, given: the bytes lesson 17's GPT keeps for backward,
// counted from its graph (lesson 17's saved-tensor ledger, parameters left out) and
// derived as a formula of its shape, per block and outside the blocks, for every
// recomputation policy and precision.
//
//   ActivationBytes f = gpt_activation_formula(config, /*batch=*/8, /*seq=*/64,
//                                              RecomputePolicy::none, Precision::fp32);
//   SavedTensorLedger m = measure_gpt_activations(model, batch, RecomputePolicy::none,
//                                                 Precision::fp32);
//   m.total_bytes == f.total()                  // to the byte
//
// THE COUNT, in elements, for B sequences of S tokens, hidden H, `a` heads, vocabulary V
// (the README derives each term from the nodes of gpt.h's forward):
//
//   per block, no recomputation:
//     ln_1     its input x, its mean and rstd          BSH + 2BS
//     c_attn   its input (ln_1's output)               BSH
//     attention  q, k, v                               3BSH
//       naive    + the probabilities P                 a B S²
//       tiled    + the output o and log-sum-exp        BSH + a B S
//     c_proj   its input (the merged heads)            BSH
//     ln_2     its input x1, mean and rstd             BSH + 2BS
//     c_fc     its input (ln_2's output)               BSH
//     gelu     its input (c_fc's output, 4H wide)      4BSH
//     mlp.c_proj its input (gelu's output)             4BSH
//     naive: 16 BSH + 4 BS + a B S²        tiled: 17 BSH + 4 BS + a B S
//   outside the blocks:
//     wte, wpe   the token ids and the positions       2BS
//     ln_f       its input, mean and rstd              BSH + 2BS
//     lm_head    its input (ln_f's output)             BSH
//     cross-entropy  log-softmax's output, the targets BSV + BS
//     2 BSH + BSV + 5 BS
//
//   selective (each attention core checkpointed on q, k, v): the core keeps q, k, v only
//     per block 16 BSH + 4 BS, for both kinds: the S² term (naive) or o and lse (tiled) gone
//   full (each block checkpointed on its input): a block keeps x alone
//     per block BSH
//
// Bytes: elements x element_bytes(precision) (4, or 2 for bf16 and fp16: precision.h).
// Per block in bytes, no recomputation, naive, 16 bits: BSH (32 + 8/H + 2aS/H), this
// course's version of Korthikanti et al.'s sbh (34 + 5as/h) (theirs adds dropout's masks
// and outputs: 2 of the 34, and 3 of the 5).
//
// THE PEAK. The ledger is what the graph holds when the forward ends. During a backward
// with recomputation, one region's activations are recorded again on top, while that
// region's backward runs: full, one block's count without recomputation; selective, one
// core's (q, k, v and P, or q, k, v, o and lse). ActivationBytes::peak() adds that, a bound
// from above: the recomputed region's inputs share storage with what its checkpoint keeps
// (in fp32; bf16 and fp16 cast them into new tensors), and are counted twice.
#pragma once

#include <cstdint>

#include "gpt.h"
#include "precision.h"
#include "recompute_policy.h"
#include "saved_tensors.h"
#include "text_corpus.h"

namespace course {

/// The formula's bytes (see THE COUNT).
struct ActivationBytes {
  int64_t per_block = 0;   ///< one block's saved bytes
  int64_t layers = 0;      ///< L
  int64_t outside = 0;     ///< embeddings, ln_f, lm_head, the loss
  int64_t peak_extra = 0;  ///< what one recomputed region adds during backward
  int64_t total() const { return layers * per_block + outside; }
  int64_t peak() const { return total() + peak_extra; }
};

/// THE COUNT for `config` (its attention kind) on [batch, seq] under policy and precision.
ActivationBytes gpt_activation_formula(const GptConfig& config, int64_t batch, int64_t seq,
                                       RecomputePolicy policy, Precision precision);

/// The measurement: install_model_seams(model, policy, precision), the forward and the
/// loss on `batch`, and the ledger of the loss's graph with model's parameters left out,
/// at element_bytes(precision). The seams stay installed.
SavedTensorLedger measure_gpt_activations(Gpt& model, const TokenBatch& batch,
                                          RecomputePolicy policy, Precision precision);

/// A batch of [batch, seq] token ids i*7+3 mod vocab (targets the next), for measurements.
TokenBatch counting_batch(int64_t vocab, int64_t batch, int64_t seq);

}  // namespace course
