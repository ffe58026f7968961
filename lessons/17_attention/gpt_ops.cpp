// gpt_ops.cpp: lesson 17, given: the forward functions of gpt_ops.h and their Nodes'
// backward formulas, each a call of a float kernel of common/tensor/transformer_kernels.h.
// The forwards check the shapes, compute, and record their node with what its backward
// reads (as lesson 06's ops_forward.cpp does); apply() allocates each needed gradient and
// leaves the others undefined.
#include "gpt_ops.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "error.h"
#include "transformer_kernels.h"

namespace course {

namespace {

std::string shapes_str(std::initializer_list<const Variable*> vars) {
  std::string out;
  for (const Variable* v : vars) {
    if (!out.empty()) out += ", ";
    out += v->defined() ? shape_str(v->shape()) : std::string("undefined");
  }
  return out;
}

}  // namespace

Variable embedding(const Tensor& ids, const Variable& weight) {
  if (!ids.defined() || ids.dim() < 1 || ids.dim() > 2 || !weight.defined() || weight.dim() != 2) {
    throw ConfigError("embedding: ids " + (ids.defined() ? shape_str(ids.shape()) : "undefined") +
                      ", weight " + shapes_str({&weight}) + "; expected [N] or [B, S], and [V, H]");
  }
  const int64_t n = ids.numel(), vocab = weight.size(0), dim = weight.size(1);
  Tensor out = Tensor::empty({n, dim});
  embedding_forward(out.data(), ids.data(), weight.data().data(), n, vocab, dim);
  Variable result(out);
  if (auto node = record<EmbeddingBackward>(result, {weight})) {
    node->ids = ids;
    node->vocab = vocab;
  }
  return result;
}

std::vector<Tensor> EmbeddingBackward::apply(const Tensor& g) {
  const int64_t dim = g.size(1);
  Tensor dtable = Tensor::zeros({vocab, dim});
  embedding_backward(dtable.data(), ids.data(), g.data(), ids.numel(), vocab, dim);
  return {dtable};
}

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  if (!x.defined() || !weight.defined() || !bias.defined() || x.dim() < 1 || weight.dim() != 1 ||
      bias.dim() != 1 || weight.size(0) != x.size(-1) || bias.size(0) != x.size(-1)) {
    throw ConfigError("layer_norm: input, weight, bias " + shapes_str({&x, &weight, &bias}) +
                      "; expected [..., C], [C], [C]");
  }
  if (!(eps > 0.0)) {
    throw ConfigError("layer_norm: eps " + std::to_string(eps) + " must be > 0");
  }
  const int64_t cols = x.size(-1), rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor out = Tensor::empty(x.shape());
  Tensor mean = Tensor::empty({rows}), rstd = Tensor::empty({rows});
  layernorm_forward(out.data(), mean.data(), rstd.data(), x.data().data(), weight.data().data(),
                    bias.data().data(), rows, cols, eps);
  Variable result(out);
  if (auto node = record<LayerNormBackward>(result, {x, weight, bias})) {
    node->x = x.data();
    node->weight = weight.data();
    node->mean = mean;
    node->rstd = rstd;
  }
  return result;
}

std::vector<Tensor> LayerNormBackward::apply(const Tensor& g) {
  const int64_t cols = weight.numel(), rows = mean.numel();
  Tensor dx, dweight, dbias;
  if (needs_input_grad(0)) dx = Tensor::empty(x.shape());
  if (needs_input_grad(1)) dweight = Tensor::zeros({cols});
  if (needs_input_grad(2)) dbias = Tensor::zeros({cols});
  auto ptr = [](const Tensor& t) { return t.defined() ? t.data() : nullptr; };
  layernorm_backward(ptr(dx), ptr(dweight), ptr(dbias), g.data(), x.data(), weight.data(),
                     mean.data(), rstd.data(), rows, cols);
  return {dx, dweight, dbias};
}

Variable gelu(const Variable& x) {
  if (!x.defined()) throw ConfigError("gelu: the input is undefined");
  Tensor out = Tensor::empty(x.shape());
  gelu_forward(out.data(), x.data().data(), x.numel());
  Variable result(out);
  if (auto node = record<GeluBackward>(result, {x})) node->x = x.data();
  return result;
}

std::vector<Tensor> GeluBackward::apply(const Tensor& g) {
  Tensor dx = Tensor::empty(x.shape());
  gelu_backward(dx.data(), g.data(), x.data(), x.numel());
  return {dx};
}

Variable split_heads(const Variable& x, int64_t batch, int64_t seq, int64_t heads) {
  if (!x.defined() || x.dim() != 2 || batch < 1 || seq < 1 || x.size(0) != batch * seq) {
    throw ConfigError("split_heads: input " + shapes_str({&x}) + " is not [B*S, H] for B = " +
                      std::to_string(batch) + ", S = " + std::to_string(seq));
  }
  const int64_t hidden = x.size(1);
  if (heads < 1 || hidden % heads != 0) {
    throw ConfigError("split_heads: " + std::to_string(heads) +
                      " heads do not divide hidden size " + std::to_string(hidden) + " of input " +
                      shapes_str({&x}));
  }
  const int64_t head_dim = hidden / heads;
  Tensor out = Tensor::empty({batch, heads, seq, head_dim});
  course::split_heads(out.data(), x.data().data(), batch, seq, heads, head_dim);
  Variable result(out);
  if (auto node = record<SplitHeadsBackward>(result, {x})) {
    node->batch = batch;
    node->seq = seq;
    node->heads = heads;
    node->head_dim = head_dim;
  }
  return result;
}

std::vector<Tensor> SplitHeadsBackward::apply(const Tensor& g) {
  Tensor dx = Tensor::empty({batch * seq, heads * head_dim});
  course::merge_heads(dx.data(), g.data(), batch, seq, heads, head_dim);
  return {dx};
}

Variable merge_heads(const Variable& x) {
  if (!x.defined() || x.dim() != 4) {
    throw ConfigError("merge_heads: input " + shapes_str({&x}) + " is not [B, heads, S, d]");
  }
  const int64_t batch = x.size(0), heads = x.size(1), seq = x.size(2), head_dim = x.size(3);
  Tensor out = Tensor::empty({batch * seq, heads * head_dim});
  course::merge_heads(out.data(), x.data().data(), batch, seq, heads, head_dim);
  Variable result(out);
  if (auto node = record<MergeHeadsBackward>(result, {x})) {
    node->batch = batch;
    node->seq = seq;
    node->heads = heads;
    node->head_dim = head_dim;
  }
  return result;
}

std::vector<Tensor> MergeHeadsBackward::apply(const Tensor& g) {
  Tensor dx = Tensor::empty({batch, heads, seq, head_dim});
  course::split_heads(dx.data(), g.data(), batch, seq, heads, head_dim);
  return {dx};
}

}  // namespace course
