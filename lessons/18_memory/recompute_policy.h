// recompute_policy.h: lesson 18, given: which parts of lesson 17's GPT recompute their
// activations in backward, and where its activations are stored in 16 bits, fitted to the
// model through gpt.h's seams.
//
//   install_model_seams(model, RecomputePolicy::selective, Precision::bf16);
//   Variable logits = model.forward(ids);      // attention cores checkpointed, bf16 seams
//
// THE POLICIES (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models"; torch's checkpoint applied per block, as torchtitan's "full" and
// "selective op" activation checkpointing do):
//   none       every op keeps what its backward needs (lesson 17's run).
//   full       each block is one checkpoint(fn, {x}): a block keeps only its input
//              [B, S, H]; its backward runs the whole block forward again.
//   selective  each attention's core, softmax(q k^T / sqrt(d)) v, is one
//              checkpoint(fn, {q, k, v}): the [B, heads, S, S] probabilities of naive
//              attention are no longer kept (the 5·a·s/h term of Korthikanti's count), at the
//              price of recomputing only the core. With tiled attention the core keeps
//              only its output and log-sum-exp, so selective saves little there: the kernel
//              has already recomputed what the policy would.
//
// 16-BIT SEAMS (precision.h's cast, when the precision is bf16 or fp16): each block's input
// and output, and each attention core's q, k, v and output, are rounded to 16 bits, and the
// gradients flowing back through those places too. Inside a block's ops the arithmetic and
// the intermediate values are float32 (the emulation precision.h describes); the ledgers
// count every activation at the precision's bytes.
#pragma once

#include <string>

#include "gpt.h"
#include "precision.h"

namespace course {

enum class RecomputePolicy { none, selective, full };

/// "none", "selective" or "full" -> the policy; anything else a ConfigError naming it.
RecomputePolicy parse_recompute_policy(const std::string& name);
/// "none", "selective", "full".
const char* recompute_policy_name(RecomputePolicy policy);

/// Installs the block runner and attention core that give `policy` and `precision`'s 16-bit
/// seams on every block of `model` (replacing what was installed; none + fp32 clears them:
/// the plain forward).
void install_model_seams(Gpt& model, RecomputePolicy policy, Precision precision);

}  // namespace course
