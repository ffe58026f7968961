// ulysses_given.cpp: lesson 19, given: Ulysses' checks, cost model and autograd op
// (ulysses.h); the two re-layouts are the exercise (ulysses.cpp).
#include <string>

#include "error.h"
#include "ulysses.h"

namespace course {

void check_ulysses_heads(int64_t heads, int cp, const char* function) {
  if (cp < 1 || heads < 1 || heads % cp != 0) {
    throw ConfigError(std::string(function) + ": Ulysses needs the heads (" +
                      std::to_string(heads) + ") to divide by the context-parallel size (" +
                      std::to_string(cp) + "); use ring attention, or heads a multiple of " +
                      std::to_string(cp));
  }
}

int64_t ulysses_all_to_all_floats(int64_t numel, int cp) {
  return numel / cp * (cp - 1);
}

int64_t ulysses_attention_forward_floats(int64_t numel, int cp) {
  return 4 * ulysses_all_to_all_floats(numel, cp);  // q, k, v to heads; o back
}

int64_t ulysses_attention_backward_floats(int64_t numel, int cp) {
  return 4 * ulysses_all_to_all_floats(numel, cp);  // do to heads; dq, dk, dv back
}

namespace {

Variable to_heads(const Variable& x, ProcessGroup& cp, SequenceLayout layout) {
  Variable out(ulysses_to_heads(x.data(), cp, layout));
  if (auto node = record<UlyssesToHeadsBackward>(out, {x})) {
    node->cp = &cp;
    node->layout = layout;
  }
  return out;
}

Variable to_sequence(const Variable& y, ProcessGroup& cp, SequenceLayout layout) {
  Variable out(ulysses_to_sequence(y.data(), cp, layout));
  if (auto node = record<UlyssesToSequenceBackward>(out, {y})) {
    node->cp = &cp;
    node->layout = layout;
  }
  return out;
}

}  // namespace

Variable ulysses_attention(const Variable& q, const Variable& k, const Variable& v,
                           ProcessGroup& cp, SequenceLayout layout, AttentionKind kind,
                           const AttentionTiles& tiles) {
  if (!q.defined() || !k.defined() || !v.defined() || q.dim() != 4 || k.shape() != q.shape() ||
      v.shape() != q.shape()) {
    const auto str = [](const Variable& x) {
      return x.defined() ? shape_str(x.shape()) : std::string("undefined");
    };
    throw ConfigError("ulysses_attention: q " + str(q) + ", k " + str(k) + ", v " + str(v) +
                      "; expected three equal shapes [B, heads, S/C, d]");
  }
  check_ulysses_heads(q.size(1), cp.size(), "ulysses_attention");
  check_sequence_split(q.size(2) * cp.size(), cp.size(), "ulysses_attention");
  const Variable o = causal_self_attention(to_heads(q, cp, layout), to_heads(k, cp, layout),
                                           to_heads(v, cp, layout), kind, tiles);
  return to_sequence(o, cp, layout);
}

std::vector<Tensor> UlyssesToHeadsBackward::apply(const Tensor& g) {
  return {ulysses_to_sequence(g, *cp, layout)};
}

std::vector<Tensor> UlyssesToSequenceBackward::apply(const Tensor& g) {
  return {ulysses_to_heads(g, *cp, layout)};
}

}  // namespace course
