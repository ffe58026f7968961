// precision.h: lesson 18, given: the three precisions a run trains in, and the cast that
// carries a tensor into 16 bits and its gradient back.
//
//   Precision p = parse_precision("bf16");
//   round_to_(t, p);                       // every element rounded to bf16 (fp32: unchanged)
//   Variable y = cast(x, p);               // forward: x rounded; backward: dL/dy rounded
//   element_bytes(p)                       // 4, 2, 2
//
// HOW THE COURSE HOLDS A 16-BIT TENSOR. Every Tensor of the course holds float32. A bf16 or
// fp16 tensor here is a float tensor each of whose values is one the 16-bit format can hold:
// the value float_to_half then half_to_float gives (lesson 14's half_float.h: round to
// nearest, ties to even; in fp16, 65520 and above is inf, 2^-25 and below is 0). The
// arithmetic then runs in float32, as a GPU's tensor cores accumulate bf16 and fp16
// products in float32, and its result is rounded again where the lesson stores it in 16
// bits. The numbers are those of a 16-bit run (to float32 accumulation); the bytes are
// counted at 2 per element by the ledgers (activation_ledger.h, memory_bench.h), which is
// what a 16-bit buffer would take.
//
// fp16 has 5 exponent bits (largest 65504, smallest normal 2^-14 = 6.1e-5, subnormals down
// to 2^-24 = 6.0e-8) and 10 mantissa bits; bf16 has float32's 8 exponent bits (the same
// range) and 7 mantissa bits. A gradient of 1e-8 survives bf16 and is 0 in fp16: the
// reason for loss scaling (grad_scaler.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "half_float.h"
#include "node.h"
#include "tensor.h"
#include "variable.h"

namespace course {

enum class Precision {
  fp32,  ///< everything float32
  bf16,  ///< 16-bit weights copies, activations and gradients; fp32 master weights
  fp16,  ///< the same in fp16, with a loss scaler (grad_scaler.h)
};

/// "fp32", "bf16" or "fp16" -> the precision; anything else is a ConfigError naming it.
Precision parse_precision(const std::string& name);
/// "fp32", "bf16", "fp16".
const char* precision_name(Precision p);
/// Bytes per element of a tensor stored in `p`: 4, 2, 2.
int64_t element_bytes(Precision p);
/// The 16-bit format of p. REQUIRES: p is not fp32.
HalfKind half_kind(Precision p);

/// `x` rounded to p (fp32: x itself).
float round_to(float x, Precision p);
/// Every element of `t` rounded to p, in place (fp32: nothing).
void round_to_(const Tensor& t, Precision p);

/// The autograd cast: forward, x's values rounded to p (a new tensor; fp32: x itself);
/// backward, dL/dy rounded to p (what a 16-bit gradient holds). One CastBackward node.
Variable cast(const Variable& x, Precision p);

/// dL/dx of cast: the gradient rounded to the precision.
struct CastBackward final : Node {
  Precision precision = Precision::fp32;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "CastBackward"; }
};

/// Of the elements of `grads` that are not zero, how many become zero when multiplied by
/// `scale` and rounded to p (underflow: the loss scaler's reason), and how many become inf.
struct FlushCount {
  int64_t nonzero = 0;   ///< elements != 0 in the float32 gradients
  int64_t flushed = 0;   ///< of those, zero after rounding
  int64_t overflow = 0;  ///< of those, +-inf after rounding
  /// flushed / nonzero (0 when there are none).
  double flushed_fraction() const;
};
FlushCount count_flushed(const std::vector<Tensor>& grads, Precision p, float scale = 1.0f);

}  // namespace course
