// tp_sequence.cpp: lesson 19, given: tensor parallelism over heads and Megatron's sequence
// parallelism on lesson 17's GPT blocks (tp_sequence.h).
#include "tp_sequence.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "attention_op.h"
#include "error.h"
#include "gpt_ops.h"
#include "node.h"
#include "ops.h"
#include "tensor_ops.h"
#include "tp_ops.h"

namespace course {

namespace {

// [B, n, H] blocks of the T ranks, as the all-gather lays them out ([T][B][n][H]), to and
// from one [B, n T, H] tensor whose rank-t tokens are [t n, t n + n).
void blocks_to_sequence(const float* blocks, float* out, int T, int64_t batch, int64_t n,
                        int64_t width) {
  const int64_t row = n * width;
  for (int t = 0; t < T; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      std::memcpy(out + (b * T + t) * row, blocks + (t * batch + b) * row, sizeof(float) * row);
    }
  }
}

void sequence_to_blocks(const float* seq, float* blocks, int T, int64_t batch, int64_t n,
                        int64_t width) {
  const int64_t row = n * width;
  for (int t = 0; t < T; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      std::memcpy(blocks + (t * batch + b) * row, seq + (b * T + t) * row, sizeof(float) * row);
    }
  }
}

void check_3d(const Variable& x, const char* what, ProcessGroup& tp) {
  if (x.dim() != 3) {
    throw ConfigError(std::string(what) + ": expected [B, n, H], got " + shape_str(x.shape()) +
                      " on tensor-parallel rank " + std::to_string(tp.rank()));
  }
}

// The all-gather along the sequence: [B, n, H] -> [B, n T, H].
Tensor gather_sequence(const Tensor& x, ProcessGroup& tp) {
  const int T = tp.size();
  const int64_t batch = x.size(0), n = x.size(1), width = x.size(2);
  std::vector<float> blocks(static_cast<size_t>(T * x.numel()));
  tp.all_gather(x.span(), blocks);
  Tensor out = Tensor::empty({batch, n * T, width});
  blocks_to_sequence(blocks.data(), out.data(), T, batch, n, width);
  return out;
}

// The reduce-scatter along the sequence: [B, n T, H] -> [B, n, H].
Tensor reduce_scatter_sequence(const Tensor& x, ProcessGroup& tp) {
  const int T = tp.size();
  const int64_t batch = x.size(0), n = x.size(1) / T, width = x.size(2);
  std::vector<float> blocks(static_cast<size_t>(x.numel()));
  sequence_to_blocks(x.data(), blocks.data(), T, batch, n, width);
  Tensor out = Tensor::empty({batch, n, width});
  tp.reduce_scatter(blocks, out.span(), ReduceOp::SUM);
  return out;
}

struct GatherSequenceBackward final : Node {
  ProcessGroup* tp = nullptr;
  std::vector<Tensor> apply(const Tensor& g) override { return {reduce_scatter_sequence(g, *tp)}; }
  std::string name() const override { return "GatherSequenceBackward"; }
};

struct ReduceScatterSequenceBackward final : Node {
  ProcessGroup* tp = nullptr;
  std::vector<Tensor> apply(const Tensor& g) override { return {gather_sequence(g, *tp)}; }
  std::string name() const override { return "ReduceScatterSequenceBackward"; }
};

// Rows [begin, begin + count) of a [rows, cols] parameter, or elements of a [rows] one: a
// contiguous run of its numbers, so one narrow_columns of the flat [1, numel] view.
Variable rows(const Variable& p, int64_t begin, int64_t count) {
  const int64_t cols = p.dim() == 2 ? p.size(1) : 1;
  const Variable flat = narrow_columns(reshape(p, {1, p.numel()}), begin * cols, count * cols);
  return p.dim() == 2 ? reshape(flat, {count, cols}) : reshape(flat, {count});
}

// The parameters of one block, by the names GptBlock registers.
struct BlockParams {
  Variable ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b;
  Variable ln2_w, ln2_b, fc_w, fc_b, mlp_w, mlp_b;
};

BlockParams block_params(GptBlock& block) {
  BlockParams p;
  const std::vector<std::pair<std::string, Variable*>> wanted = {
      {"ln_1.weight", &p.ln1_w},         {"ln_1.bias", &p.ln1_b},
      {"attn.c_attn.weight", &p.attn_w}, {"attn.c_attn.bias", &p.attn_b},
      {"attn.c_proj.weight", &p.proj_w}, {"attn.c_proj.bias", &p.proj_b},
      {"ln_2.weight", &p.ln2_w},         {"ln_2.bias", &p.ln2_b},
      {"mlp.c_fc.weight", &p.fc_w},      {"mlp.c_fc.bias", &p.fc_b},
      {"mlp.c_proj.weight", &p.mlp_w},   {"mlp.c_proj.bias", &p.mlp_b}};
  for (const auto& [name, param] : block.named_parameters()) {
    for (const auto& [want, slot] : wanted) {
      if (name == want) *slot = param;
    }
  }
  return p;
}

// One block under TP (and SP): see the top of tp_sequence.h.
Variable tp_block(GptBlock& block, const Variable& x, ProcessGroup& tp, bool sp,
                  const AttentionCore& core) {
  const GptConfig& config = block.attn().config();
  const int T = tp.size(), t = tp.rank();
  const int64_t h = config.hidden, heads = config.heads / T, hd = h / T;
  const BlockParams p = block_params(block);
  // Into a TP region: [B, s, H] on every rank of the group (f, or SP's all-gather).
  const auto enter = [&](const Variable& v) {
    return sp ? gather_sequence_from_tp(v, tp) : copy_to_tp(v, tp);
  };
  // Out of it: the sum of the ranks' partial outputs (g, or SP's reduce-scatter).
  const auto leave = [&](const Variable& partial) {
    return sp ? reduce_scatter_sequence_to_tp(partial, tp) : reduce_from_tp(partial, tp);
  };

  const Variable a = enter(layer_norm(x, p.ln1_w, p.ln1_b));
  const int64_t batch = a.size(0), seq = a.size(1);
  const Variable a2 = reshape(a, {batch * seq, h});
  // Rows of this rank's heads in each of q, k and v: [j H + t H/T, j H + (t+1) H/T).
  const auto head_rows = [&](int64_t j) {
    return linear(a2, rows(p.attn_w, j * h + t * hd, hd), rows(p.attn_b, j * h + t * hd, hd));
  };
  const Variable q = split_heads(head_rows(0), batch, seq, heads);
  const Variable k = split_heads(head_rows(1), batch, seq, heads);
  const Variable v = split_heads(head_rows(2), batch, seq, heads);
  const Variable y =
      core ? core(q, k, v) : causal_self_attention(q, k, v, config.attention, config.tiles);
  const Variable attn_partial = reshape(
      linear(merge_heads(y), narrow_columns(p.proj_w, t * hd, hd), Variable()), {batch, seq, h});
  const Variable x1 = add(x, add(leave(attn_partial), p.proj_b));

  const Variable m = reshape(enter(layer_norm(x1, p.ln2_w, p.ln2_b)), {batch * seq, h});
  const int64_t f = 4 * h / T;
  const Variable hid = gelu(linear(m, rows(p.fc_w, t * f, f), rows(p.fc_b, t * f, f)));
  const Variable mlp_partial =
      reshape(linear(hid, narrow_columns(p.mlp_w, t * f, f), Variable()), {batch, seq, h});
  return add(x1, add(leave(mlp_partial), p.mlp_b));
}

}  // namespace

Variable gather_sequence_from_tp(const Variable& x, ProcessGroup& tp) {
  check_3d(x, "gather_sequence_from_tp", tp);
  Variable out(gather_sequence(x.data(), tp));
  if (auto node = record<GatherSequenceBackward>(out, {x})) node->tp = &tp;
  return out;
}

Variable reduce_scatter_sequence_to_tp(const Variable& x, ProcessGroup& tp) {
  check_3d(x, "reduce_scatter_sequence_to_tp", tp);
  if (x.size(1) % tp.size() != 0) {
    throw ConfigError("reduce_scatter_sequence_to_tp: " + std::to_string(x.size(1)) +
                      " tokens do not divide over " + std::to_string(tp.size()) +
                      " tensor-parallel ranks (rank " + std::to_string(tp.rank()) + ")");
  }
  Variable out(reduce_scatter_sequence(x.data(), tp));
  if (auto node = record<ReduceScatterSequenceBackward>(out, {x})) node->tp = &tp;
  return out;
}

BlockRunner tp_block_runner(ProcessGroup& tp, bool sequence_parallel, AttentionCore core) {
  return [&tp, sequence_parallel, core = std::move(core)](GptBlock& block, const Variable& x) {
    const GptConfig& config = block.attn().config();
    if (config.heads % tp.size() != 0) {
      throw ConfigError("tensor parallelism over heads: " + std::to_string(config.heads) +
                        " heads do not divide over " + std::to_string(tp.size()) +
                        " tensor-parallel ranks (rank " + std::to_string(tp.rank()) + ")");
    }
    return tp_block(block, x, tp, sequence_parallel, core);
  };
}

bool tp_sliced_parameter(const std::string& name) {
  for (const char* sliced : {"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                             "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight"}) {
    const std::string s(sliced);
    if (name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      return true;
    }
  }
  return false;
}

void scale_tp_gradients(Module& model, int T, bool sequence_parallel) {
  if (T == 1 || sequence_parallel) return;  // SP: each rank's loss is over its share
  for (const auto& [name, p] : model.named_parameters()) {
    const Tensor g = p.grad();
    if (g.defined() && tp_sliced_parameter(name)) scale_(g, static_cast<float>(T));
  }
}

Tensor sequence_piece(const Tensor& x, int T, int t) {
  const int64_t batch = x.size(0), seq = x.size(1);
  if (seq % T != 0) {
    throw ConfigError("sequence parallelism: " + std::to_string(seq) +
                      " tokens per sequence do not divide over " + std::to_string(T) +
                      " tensor-parallel ranks");
  }
  const int64_t n = seq / T, inner = x.numel() / (batch * seq);
  Shape shape = x.shape();
  shape[1] = n;
  Tensor out = Tensor::empty(shape);
  for (int64_t b = 0; b < batch; ++b) {
    std::memcpy(out.data() + b * n * inner, x.data() + (b * seq + t * n) * inner,
                sizeof(float) * n * inner);
  }
  return out;
}

}  // namespace course
