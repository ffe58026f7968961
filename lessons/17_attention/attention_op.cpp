// attention_op.cpp: lesson 17, given: causal_self_attention and its node (attention_op.h).
#include "attention_op.h"

#include "error.h"

namespace course {

AttentionKind parse_attention_kind(const std::string& name) {
  if (name == "naive") return AttentionKind::naive;
  if (name == "tiled") return AttentionKind::tiled;
  throw ConfigError("attention kind '" + name + "' is unknown; choose naive or tiled");
}

const char* attention_kind_name(AttentionKind kind) {
  return kind == AttentionKind::naive ? "naive" : "tiled";
}

Variable causal_self_attention(const Variable& q, const Variable& k, const Variable& v,
                               AttentionKind kind, const AttentionTiles& tiles) {
  if (!q.defined() || !k.defined() || !v.defined() || q.dim() != 4 || k.shape() != q.shape() ||
      v.shape() != q.shape()) {
    const auto str = [](const Variable& x) {
      return x.defined() ? shape_str(x.shape()) : std::string("undefined");
    };
    throw ConfigError("causal_self_attention: q " + str(q) + ", k " + str(k) + ", v " + str(v) +
                      "; expected three equal shapes [B, heads, S, d]");
  }
  AttentionShape shape;
  shape.batch_heads = q.size(0) * q.size(1);
  shape.seq = q.size(2);
  shape.head_dim = q.size(3);
  shape.causal = true;
  check_attention_shape(shape, "causal_self_attention");
  Tensor o = Tensor::empty(q.shape());
  Tensor p;
  Tensor lse;
  if (kind == AttentionKind::naive) {
    p = Tensor::empty({q.size(0), q.size(1), shape.seq, shape.seq});
    attention_naive_forward(shape, q.data().data(), k.data().data(), v.data().data(), o.data(),
                            p.data());
  } else {
    check_attention_tiles(tiles, "causal_self_attention");
    lse = Tensor::empty({q.size(0), q.size(1), shape.seq});
    attention_tiled_forward(shape, tiles, q.data().data(), k.data().data(), v.data().data(),
                            o.data(), lse.data());
  }
  Variable out(o);
  if (auto node = record<AttentionBackward>(out, {q, k, v})) {
    node->kind = kind;
    node->shape = shape;
    node->tiles = tiles;
    node->input_shape = q.shape();
    node->q = q.data();
    node->k = k.data();
    node->v = v.data();
    if (kind == AttentionKind::naive) {
      node->p = p;
    } else {
      node->o = o;
      node->lse = lse;
    }
  }
  return out;
}

std::vector<Tensor> AttentionBackward::apply(const Tensor& g) {
  if (g.shape() != input_shape) {
    throw ConfigError("AttentionBackward: gradient " + shape_str(g.shape()) + ", expected " +
                      shape_str(input_shape));
  }
  Tensor dq = Tensor::empty(input_shape);
  Tensor dk = Tensor::empty(input_shape);
  Tensor dv = Tensor::empty(input_shape);
  if (kind == AttentionKind::naive) {
    attention_naive_backward(shape, q.data(), k.data(), v.data(), p.data(), g.data(), dq.data(),
                             dk.data(), dv.data());
  } else {
    attention_tiled_backward(shape, tiles, q.data(), k.data(), v.data(), o.data(), lse.data(),
                             g.data(), dq.data(), dk.data(), dv.data());
  }
  return {dq, dk, dv};
}

std::vector<Tensor> AttentionBackward::saved_tensors() const {
  if (kind == AttentionKind::naive) return {q, k, v, p};
  return {q, k, v, o, lse};
}

}  // namespace course
