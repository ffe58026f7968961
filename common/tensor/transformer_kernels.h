// transformer_kernels.h: the CPU kernels a GPT needs besides plain matrix products:
// LayerNorm, GELU, token embedding, batched matmul, (causal) softmax, and the reshapes
// between [B, S, heads * d] and [B, heads, S, d].
//
// The names and the conventions are llm.c's (train_gpt2.c): `module_forward` computes the
// output from the inputs; `module_backward` WRITES (overwrites) the gradient of the input
// activation (dx) and ACCUMULATES (+=) into the gradients of the parameters (dweight, dbias,
// dtable), so several uses of one parameter add up, and the caller zeroes them once per
// step. Each kernel is a template over the element type T, explicitly instantiated for
// float (training) and double (the finite-difference tests, which need 1e-6 relative).
//
// Conventions for every kernel:
//   - pointers are to CPU memory, contiguous, row-major; `rows x cols` is rows runs of cols;
//   - outputs never alias inputs unless the kernel says so;
//   - counts are >= 0 and 0 is a no-op; a negative count throws ConfigError naming the kernel;
//   - the sums of a row reduction (LayerNorm's mean and variance, softmax's normaliser,
//     their backward's row sums) are accumulated in double, whatever T is.
//
// What this is not: autograd. These are raw, shape-unchecked entry points (beyond the
// counts and the ids); lesson 17's gpt_ops.h wraps them in Variables and Nodes. Nor is it a
// device seam: there is no CUDA twin (tensor_kernels.h is that seam for float tensors).
//
// Tested against direct double loops and central differences by
// tests/common/transformer_kernels_test.cpp (./build/solutions/test_common
// --gtest_filter='TransformerKernels*').
#pragma once

#include <cstdint>

namespace course {

// ---- LayerNorm ---------------------------------------------------------------------------
// Over the last dimension of x [rows, cols], as torch.nn.LayerNorm(cols):
//   mean_r = (1/C) sum_c x_rc,  var_r = (1/C) sum_c (x_rc - mean_r)²  (biased, as torch)
//   rstd_r = 1 / sqrt(var_r + eps),  out_rc = (x_rc - mean_r) rstd_r weight_c + bias_c

/// LayerNorm of every row of x [rows, cols] with weight and bias [cols]. Writes out
/// [rows, cols] and, for the backward, mean and rstd [rows] (either may be nullptr when
/// no backward follows). REQUIRES: eps > 0; rows, cols >= 0.
template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* x, const T* weight, const T* bias,
                       int64_t rows, int64_t cols, double eps);

/// The backward of layernorm_forward, with n = (x - mean) rstd and g = dout weight:
///   dx = rstd (g - mean_c(g) - n mean_c(g n))          WRITTEN
///   dweight += sum_r dout n,  dbias += sum_r dout        ACCUMULATED
/// mean and rstd are the forward's. dx, dweight or dbias may be nullptr to skip it.
template <typename T>
void layernorm_backward(T* dx, T* dweight, T* dbias, const T* dout, const T* x, const T* weight,
                        const T* mean, const T* rstd, int64_t rows, int64_t cols);

// ---- GELU --------------------------------------------------------------------------------
// GPT-2's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), rather than
// the exact x Phi(x): GPT-2 was trained with it (its weights expect it), nanoGPT and llm.c
// keep it, and torch computes the same with nn.GELU(approximate="tanh"), so a checkpoint
// and its loss mean the same thing in both. The two forms differ by less than 1e-3.

/// out[i] = gelu(x[i]) for i < n. out may alias x.
template <typename T>
void gelu_forward(T* out, const T* x, int64_t n);

/// dx[i] = gelu'(x[i]) dout[i] (WRITTEN), x the forward's input. dx may alias dout.
template <typename T>
void gelu_backward(T* dx, const T* dout, const T* x, int64_t n);

// ---- Embedding ---------------------------------------------------------------------------
// ids hold token indices as floats (the course's convention for targets): each must be a
// whole number in [0, vocab), else ConfigError naming the id and its position.

/// out[i, :] = table[ids[i], :] for i < n: a gather of rows of table [vocab, dim] into out
/// [n, dim].
template <typename T>
void embedding_forward(T* out, const float* ids, const T* table, int64_t n, int64_t vocab,
                       int64_t dim);

/// dtable[ids[i], :] += dout[i, :] for i < n (ACCUMULATED): a scatter-add, so a token that
/// occurs twice receives both rows. dtable is [vocab, dim], dout [n, dim].
template <typename T>
void embedding_backward(T* dtable, const float* ids, const T* dout, int64_t n, int64_t vocab,
                        int64_t dim);

// ---- Batched matrix product --------------------------------------------------------------

/// c[b] = alpha op(a[b]) op(b[b]) + beta c[b] for b < batch, one cblas_sgemm / cblas_dgemm
/// per matrix; op(x) = x, or xᵀ where trans_x. Shapes as Kernels::gemm (tensor_kernels.h):
/// op(a[b]) is [m, k] (a[b] is [k, m] when trans_a), op(b[b]) is [k, n], c[b] is [m, n];
/// the matrices of a batch follow each other (a holds batch * m * k numbers, and so on).
/// With beta == 0, c's old contents are ignored (NaNs included). c may not alias a or b.
template <typename T>
void bmm(bool trans_a, bool trans_b, int64_t batch, int64_t m, int64_t n, int64_t k, T alpha,
         const T* a, const T* b, T beta, T* c);

// ---- Softmax -----------------------------------------------------------------------------

/// out = softmax of every row of x [rows, cols], the row maximum subtracted first. With
/// causal, x is blocks of [seq, seq] (cols = seq, rows a multiple of seq, else
/// ConfigError) and row i of every block keeps columns j <= i: the others are exactly 0 in
/// out and x's values there are never read. out may alias x.
template <typename T>
void softmax_forward(T* out, const T* x, int64_t rows, int64_t cols, bool causal);

/// dx = p (dout - rowsum(dout p)) (WRITTEN), p = the forward's out [rows, cols]. A causal
/// softmax needs no flag: its masked p are 0, so are their dx. dx may alias dout.
template <typename T>
void softmax_backward(T* dx, const T* dout, const T* p, int64_t rows, int64_t cols);

// ---- Heads -------------------------------------------------------------------------------

/// out [batch, heads, seq, head_dim] from x [batch, seq, heads * head_dim]:
/// out[b, h, s, e] = x[b, s, h * head_dim + e]. out may not alias x.
template <typename T>
void split_heads(T* out, const T* x, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim);

/// The inverse of split_heads: out [batch, seq, heads * head_dim] from x
/// [batch, heads, seq, head_dim]. Also the backward of split_heads (a permutation's
/// gradient is the inverse permutation), as split_heads is merge_heads'. out may not alias x.
template <typename T>
void merge_heads(T* out, const T* x, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim);

}  // namespace course
