// gpt_ops.h: lesson 17, given: the differentiable operations a GPT needs besides lesson
// 06's (add, linear, reshape, cross_entropy, ...) and the attention of attention_op.h:
//
//   embedding     ids [N] or [B, S] (token indices as floats), table [V, H] -> [N or B*S, H]
//   layer_norm    x [..., C], weight [C], bias [C] -> x's shape (torch.nn.LayerNorm(C))
//   gelu          any shape, GPT-2's tanh form (torch's nn.GELU(approximate="tanh"))
//   split_heads   [B*S, heads*d] -> [B, heads, S, d]   (q, k and v before attention)
//   merge_heads   [B, heads, S, d] -> [B*S, heads*d]   (attention's output after it)
//
// Each one computes its result with the float kernels of common/tensor/transformer_kernels.h
// and, when it must (node.h), records one Node below, which keeps only what its backward
// formula reads and lists it in saved_tensors() (what saved_tensors.h's ledger counts):
//
//   EmbeddingBackward   ids (a gather's backward is a scatter-add into a zero [V, H])
//   LayerNormBackward   x, weight, and the per-row mean and rstd [rows] of the forward
//   GeluBackward        x
//   SplitHeadsBackward, MergeHeadsBackward: nothing (a permutation's backward is the
//                       inverse permutation; it needs the sizes only)
//
// Shape errors are ConfigErrors naming the op and the shapes. CPU tensors only.
//
// What this is not: an exercise. The formulas are derived in transformer_kernels.h and
// tested there against central differences in double; tests/17_attention/gpt_ops_test.cpp
// runs lesson 06's gradcheck on each op.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// Rows ids of table weight [V, H]: ids [N] or [B, S] holds token indices as floats, each
/// a whole number in [0, V) (ConfigError naming the id and its position otherwise); the
/// result is [numel(ids), H]. Only weight is differentiated (ids are data).
Variable embedding(const Tensor& ids, const Variable& weight);

/// LayerNorm over the last dimension of x [..., C], with weight and bias [C], as
/// torch.nn.functional.layer_norm(x, [C], weight, bias, eps): biased variance, eps inside
/// the square root. The result has x's shape.
Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias,
                    double eps = 1e-5);

/// GELU, GPT-2's tanh approximation 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x³))), the
/// form GPT-2 was trained with; torch's nn.GELU(approximate="tanh").
Variable gelu(const Variable& x);

/// [B*S, H] -> [B, heads, S, H/heads]: row b*S + s, columns [h*d, (h+1)*d) become
/// [b, h, s, :]. REQUIRES: x is 2-D with B*S rows and heads divides H (ConfigError
/// naming both numbers otherwise).
Variable split_heads(const Variable& x, int64_t batch, int64_t seq, int64_t heads);

/// The inverse of split_heads: [B, heads, S, d] -> [B*S, heads*d]. REQUIRES: x is 4-D.
Variable merge_heads(const Variable& x);

/// embedding's node: scatters g [N, H] back into a zero [V, H] gradient of the table.
struct EmbeddingBackward final : Node {
  Tensor ids;  ///< the forward's ids, as given
  int64_t vocab = 0;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "EmbeddingBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {ids}; }
};

/// layer_norm's node: gradients of x, weight and bias (transformer_kernels.h's formula).
struct LayerNormBackward final : Node {
  Tensor x, weight;
  Tensor mean, rstd;  ///< [rows]: the forward's statistics, so backward does not redo them
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "LayerNormBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {x, weight, mean, rstd}; }
};

/// gelu's node: gelu'(x) g.
struct GeluBackward final : Node {
  Tensor x;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "GeluBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {x}; }
};

/// split_heads' node: merges g [B, heads, S, d] back into [B*S, heads*d].
struct SplitHeadsBackward final : Node {
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "SplitHeadsBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {}; }
};

/// merge_heads' node: splits g [B*S, heads*d] back into [B, heads, S, d].
struct MergeHeadsBackward final : Node {
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "MergeHeadsBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {}; }
};

}  // namespace course
