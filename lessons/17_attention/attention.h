// attention.h: lesson 17, the exercise: one head's scaled dot-product attention, forward and
// backward, twice: naive (the S x S matrix of probabilities kept for backward) and tiled
// (FlashAttention-2's online softmax on the CPU: only one number per query row kept).
//
//   AttentionShape s{/*batch_heads=*/8, /*seq=*/256, /*head_dim=*/16, /*causal=*/true};
//   attention_naive_forward(s, q, k, v, o, p);                 // p: [8, 256, 256]
//   attention_tiled_forward(s, AttentionTiles{}, q, k, v, o, lse);   // lse: [8, 256]
//   attention_tiled_backward(s, AttentionTiles{}, q, k, v, o, lse, dout, dq, dk, dv);
//
// Row-major contiguous arrays; n = batch_heads independent problems, each [S, d]:
//   q, k, v, o, dout, dq, dk, dv   [n, S, d]   (row i of problem b at (b S + i) d)
//   p                              [n, S, S]   (naive only)
//   lse                            [n, S]      (tiled only)
// With c = 1/sqrt(d), for each problem (dropping b):
//
//   S_ij = c q_i . k_j                  scores; causal: S_ij = -inf for j > i
//   P_ij = exp(S_ij - lse_i)            lse_i = log sum_j exp(S_ij): softmax along row i
//   O_i  = sum_j P_ij v_j
//
// THE BACKWARD (README derives it). Given dO = dL/dO:
//   dV = Pᵀ dO          dP = dO Vᵀ          dS_ij = P_ij (dP_ij - sum_k dP_ik P_ik)
//   dQ = c dS K         dK = c dSᵀ Q
// and sum_k dP_ik P_ik = sum_k P_ik (dO_i . v_k) = dO_i . O_i =: D_i, which the tiled
// backward reads off dO and O without P.
//
// NAIVE. Forward: 1. S = c Q Kᵀ, the causal entries -inf; 2. each row's softmax into p
// (masked entries exactly 0); 3. O = P V. Backward: the formulas above, P read from p.
//
// TILED (Dao, "FlashAttention-2", 2023, algorithms 1 and 2). Queries in blocks of
// block_q rows, keys in blocks of block_k; the last block of each may be short. With
// causal, a key block whose first key comes after the query block's last query is masked
// entirely and skipped (never computed):
//
//              key blocks ->   (block_q = block_k = 4, S = 10; x computed, . skipped)
//               k0-3  k4-7  k8-9
//     q0-3     [ x  ] [ .  ] [ . ]     the block on the diagonal is computed and masked
//     q4-7     [ x  ] [ x  ] [ . ]     inside: S_ij = -inf for j > i
//     q8-9     [ x  ] [ x  ] [ x ]
//
// Forward, for each query block, rows i in it:
//   1. m_i = -inf (running maximum), l_i = 0 (running sum), O_i = 0;
//   2. for each key block (in order, skipping the causal ones): scores S_ij of the block;
//      m'_i = max(m_i, max_j S_ij); P~_ij = exp(S_ij - m'_i);
//      l_i = exp(m_i - m'_i) l_i + sum_j P~_ij;  O_i = exp(m_i - m'_i) O_i + sum_j P~_ij v_j;
//      m_i = m'_i   (the rescale by exp(m_i - m'_i) is what makes the online softmax exact)
//   3. O_i = O_i / l_i; lse_i = m_i + log l_i.
// Backward, D_i = dO_i . O_i for every row first; then for each key block, for each query
// block that sees it (the same causal skip):
//   4. P_ij = exp(S_ij - lse_i) recomputed from the scores (masked entries 0);
//   5. dV_j += sum_i P_ij dO_i;  dP_ij = dO_i . v_j;  dS_ij = P_ij (dP_ij - D_i);
//   6. dQ_i += c sum_j dS_ij k_j;  dK_j += c sum_i dS_ij q_i.
// Scratch: one block_q x block_k tile of scores (and one of dS in backward) plus a few
// numbers per row of a block (m, l; D per row of a problem): nothing S x S, ever.
//
// The tiled backward takes o and lse as arguments rather than saving them itself, so that
// a caller holding the o and lse of a longer row (lesson 19's ring attention, which merges
// blocks of keys from other ranks) gets this block's contribution to dq, dk and dv.
//
// What this is not: fast. Plain loops in T (float or double), one thread; on a CPU the
// tiled kernel saves memory (the S x S matrix), not time. No dropout, no padding mask.
// The Variable op over these kernels is attention_op.h's causal_self_attention.
#pragma once

#include <cstdint>

namespace course {

/// n = batch_heads independent attention problems of S queries and keys of dimension d.
struct AttentionShape {
  int64_t batch_heads = 1;  ///< B * heads: independent [seq, head_dim] problems
  int64_t seq = 1;          ///< S
  int64_t head_dim = 1;     ///< d; scores are scaled by 1/sqrt(d)
  bool causal = true;       ///< query i sees keys j <= i
};

/// The tiled kernels' block sizes (FlashAttention's B_r and B_c). Need not divide S.
struct AttentionTiles {
  int64_t block_q = 32;  ///< query rows per block
  int64_t block_k = 32;  ///< key rows per block
};

/// Throws ConfigError naming `function` and the value unless batch_heads, seq and head_dim
/// are all >= 1. Every kernel below calls it first.
void check_attention_shape(const AttentionShape& s, const char* function);
/// Throws ConfigError naming `function` and the value unless block_q and block_k are >= 1.
void check_attention_tiles(const AttentionTiles& tiles, const char* function);

/// Naive forward: o = softmax(c q kᵀ, causal mask) v, and p = the probabilities, masked
/// entries exactly 0 (each row of p sums to 1). Steps NAIVE 1-3 above.
/// REQUIRES: the shape valid (check_attention_shape); q, k, v [n, S, d]; o [n, S, d] and
/// p [n, S, S] are OVERWRITTEN. No argument may overlap an output.
template <typename T>
void attention_naive_forward(const AttentionShape& s, const T* q, const T* k, const T* v, T* o,
                             T* p);

/// Naive backward from dout = dL/do, with p from attention_naive_forward on the same q, k,
/// v: dv = pᵀ dout, ds = p (dout vᵀ - rowsum(dout vᵀ p)), dq = c ds k, dk = c dsᵀ q.
/// REQUIRES: as the forward; dq, dk, dv [n, S, d] are OVERWRITTEN (not accumulated into).
template <typename T>
void attention_naive_backward(const AttentionShape& s, const T* q, const T* k, const T* v,
                              const T* p, const T* dout, T* dq, T* dk, T* dv);

/// Tiled forward (steps 1-3 above): o as attention_naive_forward's, and lse [n, S] the
/// log-sum-exp of each query row's scaled (and masked) scores, instead of p.
/// REQUIRES: the shape and tiles valid; o and lse are OVERWRITTEN. Scratch memory
/// O(block_q block_k + block_q), independent of S.
template <typename T>
void attention_tiled_forward(const AttentionShape& s, const AttentionTiles& tiles, const T* q,
                             const T* k, const T* v, T* o, T* lse);

/// Tiled backward (steps 4-6 above), P recomputed block by block from lse: the same dq, dk,
/// dv as attention_naive_backward, up to rounding. o and lse are the forward's (or, in a
/// longer computation, the whole row's: see the top of this file).
/// REQUIRES: the shape and tiles valid; dq, dk, dv [n, S, d] are OVERWRITTEN. Scratch
/// memory O(block_q block_k + S).
template <typename T>
void attention_tiled_backward(const AttentionShape& s, const AttentionTiles& tiles, const T* q,
                              const T* k, const T* v, const T* o, const T* lse, const T* dout,
                              T* dq, T* dk, T* dv);

}  // namespace course
