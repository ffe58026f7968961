// ring_attention.h: lesson 19, the exercise: causal attention over a sequence split across
// the C ranks of a context-parallel group (Liu et al., "Ring Attention", 2023; the
// zig-zag balancing of Megatron-LM and torch's context_parallel). Each rank keeps its own
// queries; the key and value blocks travel a ring, and each rank folds every visiting
// block into its rows with lesson 17's tiled kernels and the log-sum-exp merge.
//
//   AttentionShape local{/*batch_heads=*/n, /*seq=*/S / C, /*head_dim=*/d, /*causal=*/true};
//   ring_attention_forward(cp, SequenceLayout::zigzag, local, tiles, q, k, v, o, lse);
//   ring_attention_backward(cp, SequenceLayout::zigzag, local, tiles, q, k, v, o, lse,
//                           dout, dq, dk, dv);
//   Variable y = ring_attention(q, k, v, cp, SequenceLayout::zigzag);   // autograd op
//
// Arrays as attention.h's, over the rank's L = S/C local tokens (sequence_layout.h says
// which): q, k, v, o, dout, dq, dk, dv [n, L, d], lse [n, L]. Local token i of chunk
// slot h (h = 0, 1: the rank's two chunks, chunks_of order) is row h L/2 + i.
//
// THE RING (C = 4). Step s, rank r holds the key/value block of rank (r - s) mod C:
//
//        kv          kv          kv
//   r0 -----> r1 -----> r2 -----> r3        step s: send the block held to r + 1,
//    ^                              |               receive the next from r - 1
//    +------------------------------+
//
//   step   rank 0 holds   rank 1 holds   rank 2 holds   rank 3 holds
//   0      kv0            kv1            kv2            kv3       (its own)
//   1      kv3            kv0            kv1            kv2
//   s      kv(0-s)        kv(1-s)        kv(2-s)        kv(3-s)   (mod C)
//
// FORWARD. o = 0 and lse = -inf per row; for s = 0..C-1, with the visiting block's owner
// src = (r - s) mod C and its chunks chunks_of(layout, C, src):
//   1. unless s = C-1: post isend(block, r + 1) and irecv(next block, r - 1) FIRST;
//   2. for each local query chunk qc and visiting key chunk kc (global chunk indices):
//        kc > qc  skipped (masked whole);
//        kc = qc  attention_tiled_forward with causal = true (the diagonal chunk);
//        kc < qc  attention_tiled_forward with causal = false;
//      and merge the partial (o_b, lse_b) into the running (o_a, lse_a) per row:
//        lse = log(e^lse_a + e^lse_b),  o = e^(lse_a - lse) o_a + e^(lse_b - lse) o_b
//      (a row that has seen nothing, lse_a = -inf, takes the partial as it is);
//   3. wait for both, swap the buffers (double buffering: the transfer of step s+1's block
//      runs while step s computes).
// BACKWARD. With the final o and lse of each whole row, each (qc, kc) pair's share of the
// gradients is attention_tiled_backward on that pair (it reads o and lse from outside: the
// reason lesson 17 built it so). dq accumulates at home. dk and dv accumulate in a buffer
// that travels with its k and v block: at step s the rank adds its share to the block of
// rank src and passes it on to r + 1 once computed; after the C-th pass (the last from
// rank src = r + 1 to r + 1 itself) every block's dk and dv are home, complete:
//   1. unless s = C-1: post the next k/v block's isend/irecv; unless C = 1: irecv the next
//      dk/dv buffer from r - 1;
//   2. add the pairs' shares: dq at home, dk and dv into the visiting buffer;
//   3. unless C = 1: isend the visiting dk/dv buffer to r + 1; wait for all; swap.
//
// WHY IT CANNOT DEADLOCK. Every rank posts its receive and its send of a step before it
// waits for either, and every send of step s has a matching receive of step s on its
// neighbour (the tag names the step and the kind), so no rank waits on a message that is
// not already on its way.
//
// COST (per rank, L = S/C, floats sent; docs/cost_models.md, lesson 19):
//   forward    (C - 1) 2 n L d          k and v, C - 1 hops
//   backward   (2C - 1) 2 n L d         k and v C - 1 hops, dk and dv C hops (home);
//                                       0 at C = 1, where nothing moves
// Compute: causal_block_products (sequence_layout.h) chunk pairs of (L/2)^2 d each.
//
// What this is not: fast, or overlapped on a CPU's one thread in any way a clock would see
// (the isend runs on the backend's thread; the structure is the GPU one). No striped
// layout, no load-balanced backward beyond the forward's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention.h"
#include "node.h"
#include "process_group.h"
#include "sequence_layout.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// What one call of a ring kernel did on this rank, added to (not reset) by the kernels.
struct RingTraffic {
  int64_t floats_sent = 0;     ///< floats this rank handed to isend
  int64_t block_products = 0;  ///< (query chunk, key chunk) pairs computed (not skipped)
};

/// The model of the COST table: floats each rank sends in one forward and one backward.
int64_t ring_attention_forward_floats(const AttentionShape& local, int cp);
int64_t ring_attention_backward_floats(const AttentionShape& local, int cp);

/// Throws ConfigError naming `function` unless the local shape is valid, causal, and its
/// L = local.seq is even (two chunks of L/2), and the tiles are valid.
void check_ring_attention(const AttentionShape& local, const AttentionTiles& tiles,
                          const char* function);

/// The forward above: o [n, L, d] and lse [n, L] of this rank's rows, over the whole
/// sequence's keys, as attention_tiled_forward on the whole sequence gives them.
/// REQUIRES: check_ring_attention; every rank of cp calls it together with the same
/// layout, shape and tiles (a collective); o and lse OVERWRITTEN; no output overlaps an
/// input. Blocks on the ring's transfers. `traffic`, when not null, is added to.
void ring_attention_forward(ProcessGroup& cp, SequenceLayout layout, const AttentionShape& local,
                            const AttentionTiles& tiles, const float* q, const float* k,
                            const float* v, float* o, float* lse, RingTraffic* traffic = nullptr);

/// The backward above: dq, dk, dv [n, L, d] of this rank's tokens from dout = dL/do, with o
/// and lse from ring_attention_forward. REQUIRES: as the forward; dq, dk, dv OVERWRITTEN.
void ring_attention_backward(ProcessGroup& cp, SequenceLayout layout, const AttentionShape& local,
                             const AttentionTiles& tiles, const float* q, const float* k,
                             const float* v, const float* o, const float* lse, const float* dout,
                             float* dq, float* dk, float* dv, RingTraffic* traffic = nullptr);

/// Causal attention of this rank's tokens over the whole sequence, as an autograd op:
/// q, k, v [B, heads, S/C, d] (this rank's tokens, `layout` order), one shape (ConfigError
/// naming the shapes otherwise); the result has that shape. Records RingAttentionBackward
/// when an input requires grad. A collective: every rank of cp calls it, and later its
/// backward, together.
Variable ring_attention(const Variable& q, const Variable& k, const Variable& v, ProcessGroup& cp,
                        SequenceLayout layout, const AttentionTiles& tiles = {});

/// ring_attention's node: dq, dk, dv by ring_attention_backward (a collective, like the
/// forward: every rank's backward must reach it).
struct RingAttentionBackward final : Node {
  ProcessGroup* cp = nullptr;  ///< the context-parallel group; outlives the graph
  SequenceLayout layout = SequenceLayout::zigzag;
  AttentionShape shape;  ///< n = B heads problems of [S/C, d], causal
  AttentionTiles tiles;
  Shape input_shape;  ///< [B, heads, S/C, d]
  Tensor q, k, v;     ///< the inputs' data
  Tensor o, lse;      ///< the output and its log-sum-exp [B, heads, S/C]
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "RingAttentionBackward"; }
  /// q, k, v, o and lse.
  std::vector<Tensor> saved_tensors() const override { return {q, k, v, o, lse}; }
};

}  // namespace course
