// precision.cpp: lesson 18, given: the precisions, the rounding to 16 bits and the autograd
// cast (see precision.h). The rounding is lesson 14's half_float.h, one value at a time:
// float_to_half then half_to_float.
#include "precision.h"

#include <cmath>
#include <memory>

#include "error.h"

namespace course {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  if (name == "fp16") return Precision::fp16;
  throw ConfigError("unknown precision \"" + name + "\": use fp32, bf16 or fp16");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32:
      return "fp32";
    case Precision::bf16:
      return "bf16";
    case Precision::fp16:
      return "fp16";
  }
  return "?";
}

int64_t element_bytes(Precision p) {
  return p == Precision::fp32 ? 4 : 2;
}

HalfKind half_kind(Precision p) {
  if (p == Precision::fp32) {
    throw ConfigError("half_kind(fp32): fp32 is not a 16-bit format; ask only for bf16 or fp16");
  }
  return p == Precision::bf16 ? HalfKind::bf16 : HalfKind::fp16;
}

float round_to(float x, Precision p) {
  if (p == Precision::fp32) return x;
  const HalfKind kind = half_kind(p);
  return half_to_float(float_to_half(x, kind), kind);
}

void round_to_(const Tensor& t, Precision p) {
  if (p == Precision::fp32 || !t.defined()) return;
  const HalfKind kind = half_kind(p);
  for (float& v : t.span()) v = half_to_float(float_to_half(v, kind), kind);
}

Variable cast(const Variable& x, Precision p) {
  if (p == Precision::fp32) return x;
  const Tensor rounded = x.data().clone();
  round_to_(rounded, p);
  Variable out(rounded);
  if (auto node = record<CastBackward>(out, {x})) node->precision = p;
  return out;
}

std::vector<Tensor> CastBackward::apply(const Tensor& g) {
  Tensor rounded = g.clone();
  round_to_(rounded, precision);
  return {rounded};
}

double FlushCount::flushed_fraction() const {
  return nonzero == 0 ? 0.0 : static_cast<double>(flushed) / static_cast<double>(nonzero);
}

FlushCount count_flushed(const std::vector<Tensor>& grads, Precision p, float scale) {
  FlushCount count;
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;  // a parameter that took no part in the loss
    for (const float v : g.span()) {
      if (v == 0.0f) continue;
      ++count.nonzero;
      const float r = round_to(v * scale, p);
      if (r == 0.0f) ++count.flushed;
      if (std::isinf(r)) ++count.overflow;
    }
  }
  return count;
}

}  // namespace course
