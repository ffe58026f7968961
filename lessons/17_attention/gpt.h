// gpt.h: lesson 17, given: a small GPT (GPT-2's architecture, nanoGPT's names) built from
// lesson 06's autograd, the ops of gpt_ops.h and the attention of attention_op.h.
//
//   Rng rng(1);
//   Gpt model({.vocab = 96, .context = 64, .layers = 2, .heads = 4, .hidden = 64}, rng);
//   Variable logits = model.forward(Variable(ids));      // ids [B, S] -> logits [B*S, V]
//   Variable loss = cross_entropy(logits, targets);       // targets [B*S]
//
// The model, on a batch of B sequences of S <= context token ids:
//
//   x = wte[ids] + wpe[0..S)                       [B, S, H]   token + position embedding
//   L times (a pre-LayerNorm block, GPT-2's):
//     x = x + attn(ln_1(x))                        causal multi-head self-attention
//     x = x + mlp(ln_2(x))                         c_fc (H -> 4H), GELU (tanh), c_proj
//   logits = lm_head(ln_f(x))                      [B*S, V]
//
//   attn(x): q, k, v = columns [0,H), [H,2H), [2H,3H) of c_attn(x) (H -> 3H), each split
//            into `heads` heads of d = H / heads ([B, heads, S, d]); causal softmax
//            attention per head (attention_op.h, naive or tiled); heads merged back to
//            [B*S, H]; c_proj (H -> H).
//
// Parameters, named as nanoGPT's state dict (torch.nn layouts: a Linear's weight is
// [out, in]), registered in this order:
//
//   transformer.wte.weight [V, H]        transformer.wpe.weight [context, H]
//   transformer.h.{i}.ln_1.weight, .bias [H]
//   transformer.h.{i}.attn.c_attn.weight [3H, H], .bias [3H]
//   transformer.h.{i}.attn.c_proj.weight [H, H], .bias [H]
//   transformer.h.{i}.ln_2.weight, .bias [H]
//   transformer.h.{i}.mlp.c_fc.weight [4H, H], .bias [4H]
//   transformer.h.{i}.mlp.c_proj.weight [H, 4H], .bias [H]
//   transformer.ln_f.weight, .bias [H]   lm_head.weight [V, H]
//
// PARAMETER COUNT (gpt_parameter_count): per block 2H + (3H² + 3H) + (H² + H) + 2H +
// (4H² + 4H) + (4H² + H) = 12H² + 13H, so
//
//   N = 2 V H + context H + L (12 H² + 13 H) + 2 H
//
// (V = 96, context = 64, L = 2, H = 64: N = 12288 + 4096 + 99968 + 128 = 116480).
//
// The output head is untied: lm_head.weight is its own [V, H] parameter rather than wte's.
// GPT-2 ties them (one matrix, two uses); untied, the state dict is one name per tensor
// (no shared storage to explain when saving or loading safetensors), and lesson 19 can cut
// the head by vocabulary across ranks without also cutting the embedding the same way. It
// costs V H parameters, 6% of the default model.
//
// Initialisation (GPT-2's, as nanoGPT's _init_weights), drawn from `rng` in registration
// order: every linear weight and both embeddings normal(0, 0.02); the two residual
// projections (attn.c_proj.weight, mlp.c_proj.weight) normal(0, 0.02 / sqrt(2 L)), so the
// residual stream's variance does not grow with depth; biases 0; LayerNorm gains 1,
// biases 0. No dropout (the corpus is small and the runs short).
//
// SEAMS (for lesson 18, which cannot be called from here): two functions a later lesson may
// install to change how the model runs without changing its modules or its parameters.
// set_block_runner(r): each block runs as r(block, x) instead of block.forward(x) (lesson
// 18 wraps a whole block in activation recomputation, or rounds its input and output to 16
// bits); set_attention_core(c): each attention runs its core, softmax(q k^T / sqrt(d)) v, as
// c(q, k, v) instead of causal_self_attention(q, k, v, kind, tiles) (lesson 18's selective
// recomputation). Empty (the default): the plain forward.
//
// What this is not: a fast transformer. Every op is one node of lesson 06's autograd on
// float tensors, on the CPU; lesson 18 counts where its memory goes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attention.h"
#include "attention_op.h"
#include "module.h"
#include "module_list.h"
#include "rng.h"
#include "variable.h"

namespace course {

/// The GPT's shape (see the top of this file).
struct GptConfig {
  int64_t vocab = 0;     ///< V: tokens
  int64_t context = 64;  ///< the longest sequence: rows of the position embedding
  int64_t layers = 2;    ///< L: blocks
  int64_t heads = 4;     ///< attention heads; must divide hidden
  int64_t hidden = 64;   ///< H: the residual stream's width
  AttentionKind attention = AttentionKind::tiled;  ///< naive or tiled (same numbers)
  AttentionTiles tiles;                            ///< the tiled kernel's block sizes

  /// H / heads.
  int64_t head_dim() const { return heads > 0 ? hidden / heads : 0; }
  /// "" when the sizes make a model, else what is wrong, naming the numbers ("4 heads do
  /// not divide hidden size 66").
  std::string problem() const;
  /// "vocab 96, context 64, 2 layers, 4 heads, hidden 64".
  std::string describe() const;
};

/// N = 2 V H + context H + L (12 H² + 13 H) + 2 H (see the top of this file).
int64_t gpt_parameter_count(const GptConfig& config);

/// Fills `t` with normal(0, std) numbers from `rng` (Box-Muller on Rng::uniform01, in
/// order), the same on every machine.
void normal_(const Tensor& t, float std, Rng& rng);

/// nn.Linear with GPT-2's initialisation: weight [out, in] normal(0, std), bias zeros.
class GptLinear : public Module {
 public:
  /// REQUIRES: in, out >= 1.
  GptLinear(int64_t in, int64_t out, float std, Rng& rng, bool bias = true);
  /// x [N, in] -> [N, out].
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  const Variable& weight() const { return weight_; }  ///< [out, in]
  const Variable& bias() const { return bias_; }      ///< [out], undefined without bias

 private:
  Variable weight_, bias_;
};

/// nn.Embedding: weight [count, dim] normal(0, std); forward takes ids as floats.
class Embedding : public Module {
 public:
  /// REQUIRES: count, dim >= 1.
  Embedding(int64_t count, int64_t dim, float std, Rng& rng);
  /// ids (any shape, whole numbers in [0, count)) -> [numel(ids), dim].
  Variable forward(const Variable& ids) override;
  std::string describe() const override;
  const Variable& weight() const { return weight_; }  ///< [count, dim]

 private:
  Variable weight_;
};

/// nn.LayerNorm over the last dimension, eps 1e-5: weight ones, bias zeros.
class LayerNorm : public Module {
 public:
  /// REQUIRES: dim >= 1.
  explicit LayerNorm(int64_t dim);
  /// x [..., dim] -> the same shape.
  Variable forward(const Variable& x) override;
  std::string describe() const override;

 private:
  Variable weight_, bias_;
};

/// How an attention runs its core on q, k, v [B, heads, S, d] (see SEAMS at the top).
using AttentionCore =
    std::function<Variable(const Variable& q, const Variable& k, const Variable& v)>;

/// Causal multi-head self-attention: c_attn, the attention op, c_proj.
class CausalSelfAttention : public Module {
 public:
  /// Draws c_attn's then c_proj's weights (c_proj with `proj_std`).
  CausalSelfAttention(const GptConfig& config, float proj_std, Rng& rng);
  /// x [B, S, H] -> [B, S, H].
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  /// Naive or tiled from the next forward on.
  void set_attention(AttentionKind kind) { config_.attention = kind; }
  /// The core's runner from the next forward on (empty: causal_self_attention).
  void set_core(AttentionCore core) { core_ = std::move(core); }
  /// The model's shape as this attention holds it (its kind and tiles included).
  const GptConfig& config() const { return config_; }

 private:
  GptConfig config_;
  std::shared_ptr<GptLinear> c_attn_, c_proj_;
  AttentionCore core_;
};

/// The block's MLP: c_fc (H -> 4H), GELU, c_proj (4H -> H).
class GptMlp : public Module {
 public:
  /// Draws c_fc's then c_proj's weights (c_proj with `proj_std`).
  GptMlp(int64_t hidden, float proj_std, Rng& rng);
  /// x [B, S, H] -> [B, S, H].
  Variable forward(const Variable& x) override;
  std::string describe() const override;

 private:
  std::shared_ptr<GptLinear> c_fc_, c_proj_;
};

/// One pre-LayerNorm block: x + attn(ln_1(x)), then + mlp(ln_2(x)).
class GptBlock : public Module {
 public:
  /// Registers ln_1, attn, ln_2, mlp, in that order.
  GptBlock(const GptConfig& config, Rng& rng);
  /// x [B, S, H] -> [B, S, H].
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  /// The block's attention (to switch its kind).
  CausalSelfAttention& attn() { return *attn_; }

 private:
  std::shared_ptr<LayerNorm> ln_1_, ln_2_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<GptMlp> mlp_;
};

/// How the model runs one block on x [B, S, H] (see SEAMS at the top).
using BlockRunner = std::function<Variable(GptBlock& block, const Variable& x)>;

/// The GPT of the top of this file.
class Gpt : public Module {
 public:
  /// REQUIRES: config.problem() is "" (ConfigError with it otherwise).
  Gpt(const GptConfig& config, Rng& rng);
  /// ids [B, S] token ids as floats, S <= context -> logits [B*S, vocab]. A longer S, or
  /// an id outside [0, vocab), is a ConfigError naming the numbers.
  Variable forward(const Variable& ids) override;
  /// The same on a piece of each sequence (lesson 19 splits the sequence over ranks): ids
  /// [B, s] and `positions` [s], the positions of those s tokens in the whole sequence
  /// (each below the context), for the position embedding. forward(ids) is this with
  /// positions 0..s-1.
  Variable forward(const Variable& ids, const std::vector<int64_t>& positions);
  std::string describe() const override;
  const GptConfig& config() const { return config_; }
  /// Switches every block's attention between naive and tiled (the parameters stay).
  void set_attention(AttentionKind kind);
  /// Every block runs through `runner` from the next forward on (empty: block.forward).
  void set_block_runner(BlockRunner runner) { runner_ = std::move(runner); }
  /// Every attention runs its core through `core` from the next forward on (empty: the
  /// kind's causal_self_attention).
  void set_attention_core(const AttentionCore& core);
  /// The blocks, in order (a runner's tests and benches reach them here).
  const std::vector<std::shared_ptr<GptBlock>>& blocks() const { return blocks_; }

 private:
  GptConfig config_;
  BlockRunner runner_;
  std::shared_ptr<Embedding> wte_, wpe_;
  std::vector<std::shared_ptr<GptBlock>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
  std::shared_ptr<GptLinear> lm_head_;
};

/// Continues `prompt` (token ids, at least one) by `count` tokens, feeding the model the
/// last `context` tokens each time: the most likely token when temperature is 0, else a
/// draw from softmax(logits / temperature) with `rng`. Runs without recording a graph.
std::vector<int32_t> gpt_generate(Gpt& model, std::vector<int32_t> prompt, int64_t count,
                                  double temperature, Rng& rng);

/// q, k or v: columns [begin, begin + count) of a 2-D x, as a new [rows, count] tensor; the
/// gradient goes back into those columns (zeros elsewhere). One NarrowColumnsBackward node.
Variable narrow_columns(const Variable& x, int64_t begin, int64_t count);

}  // namespace course
