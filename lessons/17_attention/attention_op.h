// attention_op.h: lesson 17, given: causal self-attention as an op of lesson 06's autograd,
// over the kernels of attention.h (your exercise), naive or tiled.
//
//   Variable q = split_heads(qkv_q, B, S, heads);           // [B, heads, S, d], as k and v
//   Variable o = causal_self_attention(q, k, v, AttentionKind::tiled);   // [B, heads, S, d]
//
// It records one node, AttentionBackward, for both kinds, which keeps what that kind's
// backward reads and lists it in saved_tensors() (what saved_tensors.h's ledger counts):
//
//   naive   q, k, v and p [B, heads, S, S]:    4 (3 n S d + n S S) bytes, n = B heads
//   tiled   q, k, v, o and lse [B, heads, S]:  4 (4 n S d + n S) bytes
//
// The forward runs in float on the inputs' data; the backward calls the matching backward
// kernel with what the node kept. CPU tensors only.
//
// What this is not: masked or cross attention (always causal, q, k and v of one shape),
// or a fused projection: q, k and v come from the GPT's c_attn (gpt.h).
#pragma once

#include <string>
#include <vector>

#include "attention.h"
#include "node.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// Which kernels of attention.h an attention layer runs.
enum class AttentionKind {
  naive,  ///< attention_naive_*: p [n, S, S] kept for backward
  tiled,  ///< attention_tiled_*: lse [n, S] kept, p recomputed block by block
};

/// "naive" or "tiled"; ConfigError naming the choices otherwise (--attention's parser).
AttentionKind parse_attention_kind(const std::string& name);
/// "naive" or "tiled".
const char* attention_kind_name(AttentionKind kind);

/// Causal softmax(q kᵀ / sqrt(d)) v per batch and head. q, k, v: [B, heads, S, d], one shape
/// (ConfigError naming the three shapes otherwise); the result has that shape. Records
/// AttentionBackward when an input requires grad (grad mode on). `tiles` is used by the
/// tiled kind only (ConfigError unless both blocks are >= 1).
Variable causal_self_attention(const Variable& q, const Variable& k, const Variable& v,
                               AttentionKind kind, const AttentionTiles& tiles = {});

/// causal_self_attention's node: the gradients of q, k and v from dL/d(output), by the
/// backward kernel of its kind.
struct AttentionBackward final : Node {
  AttentionKind kind = AttentionKind::naive;  ///< which kernels ran, and run backward
  AttentionShape shape;                       ///< n = B heads problems of [S, d], causal
  AttentionTiles tiles;                       ///< the tiled kind's blocks
  Shape input_shape;                          ///< [B, heads, S, d], for the gradients
  Tensor q, k, v;                             ///< the inputs' data
  Tensor p;                                   ///< naive: the probabilities [B, heads, S, S]
  Tensor o, lse;  ///< tiled: the output and the log-sum-exp [B, heads, S]
  /// dq, dk, dv [B, heads, S, d] from g = dL/d(output), of that shape (ConfigError otherwise).
  std::vector<Tensor> apply(const Tensor& g) override;
  /// "AttentionBackward", for both kinds.
  std::string name() const override { return "AttentionBackward"; }
  /// q, k, v and p (naive), or q, k, v, o and lse (tiled).
  std::vector<Tensor> saved_tensors() const override;
};

}  // namespace course
