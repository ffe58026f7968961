// tp_sequence.h: lesson 19, given: tensor parallelism over the attention heads of lesson
// 17's GPT (lesson 15's column- and row-parallel split, applied to a block), and Megatron's
// sequence parallelism (Korthikanti et al. 2022) around it.
//
//   model.set_block_runner(tp_block_runner(*tp, /*sequence_parallel=*/true, core));
//   Variable logits = model.forward(Variable(my_ids), my_positions);   // my tokens only
//   loss.backward();
//   scale_tp_gradients(model, tp->size(), true);   // (nothing under SP); then the mean
//
// TENSOR PARALLELISM OVER HEADS (T ranks, rank t, heads h divisible by T, H = hidden):
//
//   x [B, s, H] ─ln_1─f─> c_attn rows of heads [t h/T, (t+1) h/T) of q, of k and of v
//        ─> q_t, k_t, v_t [B, h/T, s, d] ─core─> y_t ─> c_proj's columns of those heads
//        ─> partial [B, s, H] ─g─> + c_proj.bias ─> + x
//   x ─ln_2─f─> c_fc's rows [t 4H/T, (t+1) 4H/T) ─GELU─> mlp.c_proj's columns ─g─> + bias
//
// f and g are lesson 15's copy_to_tp and reduce_from_tp (tp_ops.h): one all-reduce of
// [B s, H] forward (g) and one backward (f) for each of the two layer pairs. Attention's heads
// are independent, so a rank runs the core on its own heads alone; with ring attention or
// Ulysses as the core, that is the cp group's exchange on h/T heads.
//
// SEQUENCE PARALLELISM. Between the TP regions (LayerNorm, the residual, the dropout a GPT
// may have) every rank of the tp group computes the same thing on the same [B, s, H]: T
// copies of those activations. SP keeps rank t's s/T tokens only, and replaces f and g by
// the two halves of their all-reduce (lesson 05: an all-reduce is a reduce-scatter followed
// by an all-gather):
//
//   x_t [B, s/T, H] ─ln_1─> gather_sequence_from_tp (all-gather fwd, reduce-scatter bwd)
//        ─> [B, s, H] ─> the TP region as above ─> partial [B, s, H]
//        ─> reduce_scatter_sequence_to_tp (reduce-scatter fwd, all-gather bwd) ─> [B, s/T, H]
//
// The same bytes cross the wire as TP's all-reduce (a ring sends (T-1)/T of the message in
// each half), and the LayerNorm and residual activations shrink by T. Megatron calls them
// gather_from_sequence_parallel_region and reduce_scatter_to_sequence_parallel_region;
// torch's SequenceParallel style and its PrepareModuleInput do the same with DTensor's
// Shard(1) <-> Replicate.
//
// PARAMETERS. Every rank keeps every parameter whole, as lesson 19's cp does, and computes
// with its slice (autograd views of the rows or columns: the gradient lands in the slice,
// zeros elsewhere). Activations and bytes on the wire are TP's; the parameters' memory is
// not divided (lesson 15's ColumnParallelLinear and RowParallelLinear hold only the slice).
// scale_tp_gradients then makes the mean over every rank (dp x cp x tp) the whole batch's
// gradient. Without SP every rank of a tp group computes the same loss, on the same tokens:
// a replicated parameter's gradient is the same on the T ranks, and a sliced one's is one
// rank's slice of it (zeros elsewhere), so the sliced ones are multiplied by T before the
// mean. With SP each rank's loss is the mean over its own s/T tokens, as a cp rank's is over
// its S/C: the sum of the T losses' gradients is T times the whole's, and the plain mean over
// the T ranks is the whole's gradient, for sliced and replicated parameters alike (nothing
// to scale: SP's ranks are one more share of the tokens, as cp's are).
//
// Collective over `tp`: every rank of the group runs the same blocks in the same order.
#pragma once

#include <string>

#include "gpt.h"
#include "module.h"
#include "process_group.h"
#include "variable.h"

namespace course {

/// x [B, n, H] (this rank's n tokens of each sequence) -> [B, n T, H], rank t's tokens at
/// [t n, t n + n). Backward: the reduce-scatter (SUM) of the gradient, this rank's tokens.
/// Collective (forward and backward).
Variable gather_sequence_from_tp(const Variable& x, ProcessGroup& tp);

/// x [B, n T, H], this rank's partial sums -> [B, n, H]: the sum over the group of tokens
/// [t n, t n + n). Backward: the all-gather of the gradient. REQUIRES: T divides the
/// sequence (ConfigError). Collective (forward and backward).
Variable reduce_scatter_sequence_to_tp(const Variable& x, ProcessGroup& tp);

/// Runs each block with this rank's heads and MLP columns (see the top of this file),
/// attention's core through `core` (empty: the model's causal_self_attention). The group
/// must outlive the runner's use. With `sequence_parallel`, the block's input and output
/// are this rank's s/T tokens; otherwise all s, the same on every rank of the group.
BlockRunner tp_block_runner(ProcessGroup& tp, bool sequence_parallel, AttentionCore core);

/// Whether a GPT parameter of this name is used by slices under tp_block_runner.
bool tp_sliced_parameter(const std::string& name);

/// Without SP, multiplies the sliced parameters' gradients by T; with SP, nothing (see
/// PARAMETERS at the top). Not collective.
void scale_tp_gradients(Module& model, int T, bool sequence_parallel);

/// The block input's [B, s/T, ...] of rank t: tokens [t s/T, (t+1) s/T) of x [B, s, ...]
/// (any trailing dimensions). REQUIRES: T divides s (ConfigError).
Tensor sequence_piece(const Tensor& x, int T, int t);

}  // namespace course
