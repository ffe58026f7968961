// ring_attention_given.cpp: lesson 19, given: ring attention's checks, its cost model and
// its autograd op (ring_attention.h); the kernels are the exercise (ring_attention.cpp).
#include <string>

#include "error.h"
#include "ring_attention.h"

namespace course {

void check_ring_attention(const AttentionShape& local, const AttentionTiles& tiles,
                          const char* function) {
  check_attention_shape(local, function);
  check_attention_tiles(tiles, function);
  if (!local.causal || local.seq % 2 != 0) {
    throw ConfigError(std::string(function) + ": " + std::to_string(local.seq) + " local tokens" +
                      (local.causal ? "" : ", not causal") +
                      "; ring attention is causal over two chunks of S/(2C) tokens a rank "
                      "(check_sequence_split)");
  }
}

int64_t ring_attention_forward_floats(const AttentionShape& local, int cp) {
  const int64_t block = 2 * local.batch_heads * local.seq * local.head_dim;  // k and v
  return (cp - 1) * block;
}

int64_t ring_attention_backward_floats(const AttentionShape& local, int cp) {
  if (cp == 1) return 0;
  const int64_t block = 2 * local.batch_heads * local.seq * local.head_dim;  // k, v or dk, dv
  return (cp - 1) * block + cp * block;
}

Variable ring_attention(const Variable& q, const Variable& k, const Variable& v, ProcessGroup& cp,
                        SequenceLayout layout, const AttentionTiles& tiles) {
  if (!q.defined() || !k.defined() || !v.defined() || q.dim() != 4 || k.shape() != q.shape() ||
      v.shape() != q.shape()) {
    const auto str = [](const Variable& x) {
      return x.defined() ? shape_str(x.shape()) : std::string("undefined");
    };
    throw ConfigError("ring_attention: q " + str(q) + ", k " + str(k) + ", v " + str(v) +
                      "; expected three equal shapes [B, heads, S/C, d]");
  }
  check_sequence_split(q.size(2) * cp.size(), cp.size(), "ring_attention");
  AttentionShape shape;
  shape.batch_heads = q.size(0) * q.size(1);
  shape.seq = q.size(2);
  shape.head_dim = q.size(3);
  shape.causal = true;
  Tensor o = Tensor::empty(q.shape());
  Tensor lse = Tensor::empty({q.size(0), q.size(1), q.size(2)});
  ring_attention_forward(cp, layout, shape, tiles, q.data().data(), k.data().data(),
                         v.data().data(), o.data(), lse.data());
  Variable out(o);
  if (auto node = record<RingAttentionBackward>(out, {q, k, v})) {
    node->cp = &cp;
    node->layout = layout;
    node->shape = shape;
    node->tiles = tiles;
    node->input_shape = q.shape();
    node->q = q.data();
    node->k = k.data();
    node->v = v.data();
    node->o = o;
    node->lse = lse;
  }
  return out;
}

std::vector<Tensor> RingAttentionBackward::apply(const Tensor& g) {
  if (g.shape() != input_shape) {
    throw ConfigError("RingAttentionBackward: gradient " + shape_str(g.shape()) + ", expected " +
                      shape_str(input_shape));
  }
  Tensor dq = Tensor::empty(input_shape);
  Tensor dk = Tensor::empty(input_shape);
  Tensor dv = Tensor::empty(input_shape);
  ring_attention_backward(*cp, layout, shape, tiles, q.data(), k.data(), v.data(), o.data(),
                          lse.data(), g.data(), dq.data(), dk.data(), dv.data());
  return {dq, dk, dv};
}

}  // namespace course
