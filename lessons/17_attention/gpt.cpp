// gpt.cpp: lesson 17, given: the GPT's modules (see gpt.h).
#include "gpt.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <utility>

#include "backward_nodes.h"
#include "error.h"
#include "gpt_ops.h"
#include "node.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {

namespace {

constexpr float kInitStd = 0.02f;  // GPT-2's

// dL/dx of narrow_columns: the output's gradient in its columns, zeros elsewhere.
struct NarrowColumnsBackward final : Node {
  int64_t rows = 0, cols = 0, begin = 0, count = 0;
  std::vector<Tensor> apply(const Tensor& g) override {
    Tensor dx = Tensor::zeros({rows, cols});
    const float* src = g.data();
    float* dst = dx.data();
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(dst + r * cols + begin, src + r * count, sizeof(float) * count);
    }
    return {dx};
  }
  std::string name() const override { return "NarrowColumnsBackward"; }
};

}  // namespace

Variable narrow_columns(const Variable& x, int64_t begin, int64_t count) {
  if (x.dim() != 2 || begin < 0 || count < 1 || begin + count > x.size(1)) {
    throw ConfigError("narrow_columns: columns [" + std::to_string(begin) + ", " +
                      std::to_string(begin + count) + ") of " + shape_str(x.shape()));
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor out = Tensor::empty({rows, count});
  const float* src = x.data().data();
  float* dst = out.data();
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * count, src + r * cols + begin, sizeof(float) * count);
  }
  Variable result(out);
  if (auto node = record<NarrowColumnsBackward>(result, {x})) {
    node->rows = rows;
    node->cols = cols;
    node->begin = begin;
    node->count = count;
  }
  return result;
}

std::string GptConfig::problem() const {
  const auto n = [](int64_t v) { return std::to_string(v); };
  if (vocab < 1) return "the vocabulary must hold at least one token (got " + n(vocab) + ")";
  if (context < 1) return "the context must be at least 1 (got " + n(context) + ")";
  if (layers < 1) return "the model needs at least one layer (got " + n(layers) + ")";
  if (heads < 1 || hidden < 1) {
    return "heads (" + n(heads) + ") and hidden size (" + n(hidden) + ") must be >= 1";
  }
  if (hidden % heads != 0) {
    return n(heads) + " heads do not divide hidden size " + n(hidden) +
           " (each head takes hidden / heads columns)";
  }
  return "";
}

std::string GptConfig::describe() const {
  return "vocab " + std::to_string(vocab) + ", context " + std::to_string(context) + ", " +
         std::to_string(layers) + " layers, " + std::to_string(heads) + " heads, hidden " +
         std::to_string(hidden) + ", " + attention_kind_name(attention) + " attention";
}

int64_t gpt_parameter_count(const GptConfig& c) {
  const int64_t h = c.hidden;
  return 2 * c.vocab * h + c.context * h + c.layers * (12 * h * h + 13 * h) + 2 * h;
}

void normal_(const Tensor& t, float std, Rng& rng) {
  float* p = t.data();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - static_cast<double>(rng.uniform01());  // (0, 1]: log is finite
    const double u2 = rng.uniform01();
    const double r = std::sqrt(-2.0 * std::log(u1));
    p[i] = static_cast<float>(std * r * std::cos(2.0 * std::numbers::pi * u2));
    if (i + 1 < n) p[i + 1] = static_cast<float>(std * r * std::sin(2.0 * std::numbers::pi * u2));
  }
}

GptLinear::GptLinear(int64_t in, int64_t out, float std, Rng& rng, bool bias) {
  if (in < 1 || out < 1) {
    throw ConfigError("GptLinear: sizes must be >= 1 (got " + std::to_string(in) + " -> " +
                      std::to_string(out) + ")");
  }
  Tensor w = Tensor::empty({out, in});
  normal_(w, std, rng);
  weight_ = register_parameter("weight", w);
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out}));
}

Variable GptLinear::forward(const Variable& x) {
  return linear(x, weight_, bias_);
}

std::string GptLinear::describe() const {
  return "Linear(in_features=" + std::to_string(weight_.size(1)) +
         ", out_features=" + std::to_string(weight_.size(0)) +
         ", bias=" + (bias_.defined() ? "True" : "False") + ")";
}

Embedding::Embedding(int64_t count, int64_t dim, float std, Rng& rng) {
  if (count < 1 || dim < 1) {
    throw ConfigError("Embedding: sizes must be >= 1 (got " + std::to_string(count) + ", " +
                      std::to_string(dim) + ")");
  }
  Tensor w = Tensor::empty({count, dim});
  normal_(w, std, rng);
  weight_ = register_parameter("weight", w);
}

Variable Embedding::forward(const Variable& ids) {
  return embedding(ids.data(), weight_);
}

std::string Embedding::describe() const {
  return "Embedding(" + std::to_string(weight_.size(0)) + ", " + std::to_string(weight_.size(1)) +
         ")";
}

LayerNorm::LayerNorm(int64_t dim) {
  if (dim < 1) throw ConfigError("LayerNorm: dim must be >= 1 (got " + std::to_string(dim) + ")");
  weight_ = register_parameter("weight", Tensor::full({dim}, 1.0f));
  bias_ = register_parameter("bias", Tensor::zeros({dim}));
}

Variable LayerNorm::forward(const Variable& x) {
  return layer_norm(x, weight_, bias_);
}

std::string LayerNorm::describe() const {
  return "LayerNorm((" + std::to_string(weight_.size(0)) + ",), eps=1e-05)";
}

CausalSelfAttention::CausalSelfAttention(const GptConfig& config, float proj_std, Rng& rng)
    : config_(config) {
  const int64_t h = config.hidden;
  c_attn_ = register_module("c_attn", std::make_shared<GptLinear>(h, 3 * h, kInitStd, rng));
  c_proj_ = register_module("c_proj", std::make_shared<GptLinear>(h, h, proj_std, rng));
}

Variable CausalSelfAttention::forward(const Variable& x) {
  const int64_t batch = x.size(0), seq = x.size(1), h = config_.hidden;
  const Variable qkv = c_attn_->forward(reshape(x, {batch * seq, h}));  // [B*S, 3H]
  const Variable q = split_heads(narrow_columns(qkv, 0, h), batch, seq, config_.heads);
  const Variable k = split_heads(narrow_columns(qkv, h, h), batch, seq, config_.heads);
  const Variable v = split_heads(narrow_columns(qkv, 2 * h, h), batch, seq, config_.heads);
  const Variable y =
      core_ ? core_(q, k, v) : causal_self_attention(q, k, v, config_.attention, config_.tiles);
  return reshape(c_proj_->forward(merge_heads(y)), {batch, seq, h});
}

std::string CausalSelfAttention::describe() const {
  return std::string("CausalSelfAttention(heads=") + std::to_string(config_.heads) +
         ", attention=" + attention_kind_name(config_.attention) + ")";
}

GptMlp::GptMlp(int64_t hidden, float proj_std, Rng& rng) {
  c_fc_ = register_module("c_fc", std::make_shared<GptLinear>(hidden, 4 * hidden, kInitStd, rng));
  c_proj_ =
      register_module("c_proj", std::make_shared<GptLinear>(4 * hidden, hidden, proj_std, rng));
}

Variable GptMlp::forward(const Variable& x) {
  const int64_t batch = x.size(0), seq = x.size(1), h = x.size(2);
  const Variable hid = gelu(c_fc_->forward(reshape(x, {batch * seq, h})));
  return reshape(c_proj_->forward(hid), {batch, seq, h});
}

std::string GptMlp::describe() const {
  return "MLP(c_fc, GELU(approximate='tanh'), c_proj)";
}

GptBlock::GptBlock(const GptConfig& config, Rng& rng) {
  const float proj_std = kInitStd / static_cast<float>(std::sqrt(2.0 * config.layers));
  ln_1_ = register_module("ln_1", std::make_shared<LayerNorm>(config.hidden));
  attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(config, proj_std, rng));
  ln_2_ = register_module("ln_2", std::make_shared<LayerNorm>(config.hidden));
  mlp_ = register_module("mlp", std::make_shared<GptMlp>(config.hidden, proj_std, rng));
}

Variable GptBlock::forward(const Variable& x) {
  const Variable x1 = add(x, attn_->forward(ln_1_->forward(x)));
  return add(x1, mlp_->forward(ln_2_->forward(x1)));
}

std::string GptBlock::describe() const {
  return "Block(ln_1, " + attn_->describe() + ", ln_2, " + mlp_->describe() + ")";
}

Gpt::Gpt(const GptConfig& config, Rng& rng) : config_(config) {
  if (const std::string problem = config.problem(); !problem.empty()) {
    throw ConfigError("Gpt: " + problem);
  }
  auto transformer = register_module("transformer", std::make_shared<ModuleDict>());
  wte_ = transformer->add("wte",
                          std::make_shared<Embedding>(config.vocab, config.hidden, kInitStd, rng));
  wpe_ = transformer->add(
      "wpe", std::make_shared<Embedding>(config.context, config.hidden, kInitStd, rng));
  auto h = transformer->add("h", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < config.layers; ++i) {
    blocks_.push_back(h->append(std::make_shared<GptBlock>(config, rng)));
  }
  ln_f_ = transformer->add("ln_f", std::make_shared<LayerNorm>(config.hidden));
  lm_head_ = register_module(
      "lm_head", std::make_shared<GptLinear>(config.hidden, config.vocab, kInitStd, rng, false));
}

Variable Gpt::forward(const Variable& ids) {
  const int64_t seq = ids.dim() == 2 ? ids.size(1) : 0;
  std::vector<int64_t> positions(static_cast<size_t>(seq));
  for (int64_t i = 0; i < seq; ++i) positions[static_cast<size_t>(i)] = i;
  return forward(ids, positions);
}

Variable Gpt::forward(const Variable& ids, const std::vector<int64_t>& positions) {
  if (ids.dim() != 2) {
    throw ConfigError("Gpt: ids must be [batch, seq], got " + shape_str(ids.shape()));
  }
  const int64_t batch = ids.size(0), seq = ids.size(1), h = config_.hidden;
  if (seq > config_.context) {
    throw ConfigError("Gpt: sequence length " + std::to_string(seq) +
                      " is longer than the model's context " + std::to_string(config_.context));
  }
  if (static_cast<int64_t>(positions.size()) != seq) {
    throw ConfigError("Gpt: " + std::to_string(positions.size()) + " positions for " +
                      std::to_string(seq) + " tokens per sequence");
  }
  Tensor pos_ids = Tensor::empty({batch * seq});
  float* pos = pos_ids.data();
  for (int64_t i = 0; i < batch * seq; ++i) {
    const int64_t p = positions[static_cast<size_t>(i % seq)];
    if (p < 0 || p >= config_.context) {
      throw ConfigError("Gpt: position " + std::to_string(p) + " outside the context [0, " +
                        std::to_string(config_.context) + ")");
    }
    pos[i] = static_cast<float>(p);
  }
  Variable x = add(wte_->forward(ids), wpe_->forward(Variable(pos_ids)));  // [B*S, H]
  x = reshape(x, {batch, seq, h});
  for (const auto& block : blocks_) x = runner_ ? runner_(*block, x) : block->forward(x);
  return lm_head_->forward(reshape(ln_f_->forward(x), {batch * seq, h}));
}

std::string Gpt::describe() const {
  return "GPT(" + config_.describe() + ")";
}

void Gpt::set_attention(AttentionKind kind) {
  config_.attention = kind;
  for (const auto& block : blocks_) block->attn().set_attention(kind);
}

void Gpt::set_attention_core(const AttentionCore& core) {
  for (const auto& block : blocks_) block->attn().set_core(core);
}

std::vector<int32_t> gpt_generate(Gpt& model, std::vector<int32_t> prompt, int64_t count,
                                  double temperature, Rng& rng) {
  if (prompt.empty()) throw ConfigError("gpt_generate: the prompt needs at least one token");
  const NoGradGuard no_grad;
  const int64_t context = model.config().context, vocab = model.config().vocab;
  for (int64_t n = 0; n < count; ++n) {
    const auto len = std::min<int64_t>(context, static_cast<int64_t>(prompt.size()));
    Tensor ids = Tensor::empty({1, len});
    for (int64_t i = 0; i < len; ++i) {
      ids.data()[i] = static_cast<float>(prompt[prompt.size() - len + i]);
    }
    const Tensor logits = model.forward(Variable(ids)).data();
    const float* last = logits.data() + (len - 1) * vocab;  // the next token's logits
    int32_t next = 0;
    if (temperature <= 0) {
      next = static_cast<int32_t>(std::max_element(last, last + vocab) - last);
    } else {
      const float top = *std::max_element(last, last + vocab);
      std::vector<double> weights(vocab);
      double total = 0;
      for (int64_t j = 0; j < vocab; ++j) {
        weights[j] = std::exp((last[j] - top) / temperature);
        total += weights[j];
      }
      double draw = rng.uniform01() * total;
      next = static_cast<int32_t>(vocab - 1);
      for (int64_t j = 0; j < vocab; ++j) {
        draw -= weights[j];
        if (draw < 0) {
          next = static_cast<int32_t>(j);
          break;
        }
      }
    }
    prompt.push_back(next);
  }
  return prompt;
}

}  // namespace course
