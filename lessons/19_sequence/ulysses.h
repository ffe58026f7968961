// ulysses.h: lesson 19, the exercise's second part: DeepSpeed-Ulysses (Jacobs et al., 2023),
// context parallelism by re-layout. Two all-to-alls trade the sequence split for a head
// split: each rank then runs lesson 17's attention on the WHOLE sequence for H/C heads.
//
//   Variable y = ulysses_attention(q, k, v, cp, SequenceLayout::zigzag);   // [B, H, S/C, d]
//
// THE RE-LAYOUT (C = 2, H = 4, heads h0..h3, rank r's tokens t_r, S/C of them each):
//
//   before (sequence-sharded)            after ulysses_to_heads (head-sharded)
//   rank 0: h0 h1 | h2 h3  of t_0        rank 0: h0 h1 of t_0 and t_1, global order
//   rank 1: h0 h1 | h2 h3  of t_1        rank 1: h2 h3 of t_0 and t_1, global order
//           slice 0  slice 1
//
// ulysses_to_heads, on every rank r at once:
//   1. pack slice j (for rank j) = heads [j H/C, (j+1) H/C) of x, [B, H/C, S/C, d];
//   2. all_to_all: slice j goes to rank j, slice src arrives from rank src;
//   3. unpack slice src: its token i is global position token_positions(layout, S, C,
//      src)[i] (zig-zag's chunks are not in order: undo them here).
// ulysses_to_sequence is its inverse (pack by token_positions, all_to_all, unpack by head),
// and each is the other's backward: a permutation's gradient is the inverse permutation.
// ulysses_attention = to_heads(q, k, v), causal_self_attention, to_sequence(o).
//
// WHY IT CANNOT DEADLOCK. Only collectives: every rank calls the same all_to_alls, in the
// same order (q, k, v, o forward; do, then dq, dk, dv backward), with the same counts.
//
// COST (per rank, floats sent; docs/cost_models.md, lesson 19): one all_to_all keeps slice
// r and sends the other C - 1, (C - 1)/C of the local tensor of N = B H (S/C) d floats:
//   forward    4 (C - 1)/C N           q, k, v to heads; o back
//   backward   4 (C - 1)/C N           do to heads; dq, dk, dv back
// against the ring's (C - 1) 2 N forward: Ulysses moves less, but C must divide H.
//
// What this is not: a way past H = C (each rank needs a head), or grouped-query attention.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention_op.h"
#include "node.h"
#include "process_group.h"
#include "sequence_layout.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// Throws ConfigError naming `function`, the heads and C unless heads % cp == 0: "Ulysses
/// needs the heads (6) to divide by the context-parallel size (4)".
void check_ulysses_heads(int64_t heads, int cp, const char* function);

/// Floats each rank sends in one all_to_all of a local tensor of `numel` floats, and in
/// one forward (or one backward) of ulysses_attention on local q of `numel` floats.
int64_t ulysses_all_to_all_floats(int64_t numel, int cp);
int64_t ulysses_attention_forward_floats(int64_t numel, int cp);
int64_t ulysses_attention_backward_floats(int64_t numel, int cp);

/// [B, H, S/C, d] of this rank's tokens (layout order) -> [B, H/C, S, d]: heads [r H/C,
/// (r+1) H/C) of the whole sequence in global order. A collective (one all_to_all).
/// REQUIRES: x 4-d; check_ulysses_heads; check_sequence_split(S, C) (ConfigError otherwise).
Tensor ulysses_to_heads(const Tensor& x, ProcessGroup& cp, SequenceLayout layout);

/// The inverse: [B, H/C, S, d] (this rank's heads, global order) -> [B, H, S/C, d] of this
/// rank's tokens in layout order. A collective (one all_to_all). REQUIRES: as to_heads.
Tensor ulysses_to_sequence(const Tensor& y, ProcessGroup& cp, SequenceLayout layout);

/// Causal attention of this rank's tokens over the whole sequence, by the re-layout above:
/// q, k, v [B, H, S/C, d], one shape; the result has that shape. `kind` and `tiles` as
/// causal_self_attention's. A collective, forward and backward, on every rank of cp.
Variable ulysses_attention(const Variable& q, const Variable& k, const Variable& v,
                           ProcessGroup& cp, SequenceLayout layout,
                           AttentionKind kind = AttentionKind::tiled,
                           const AttentionTiles& tiles = {});

/// ulysses_to_heads as an op: its backward is ulysses_to_sequence of the gradient.
struct UlyssesToHeadsBackward final : Node {
  ProcessGroup* cp = nullptr;
  SequenceLayout layout = SequenceLayout::zigzag;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "UlyssesToHeadsBackward"; }
};

/// ulysses_to_sequence as an op: its backward is ulysses_to_heads of the gradient.
struct UlyssesToSequenceBackward final : Node {
  ProcessGroup* cp = nullptr;
  SequenceLayout layout = SequenceLayout::zigzag;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "UlyssesToSequenceBackward"; }
};

}  // namespace course
