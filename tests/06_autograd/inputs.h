// inputs.h: index-dependent test inputs for the lesson 06 tests.
//
// All-ones or all-equal inputs hide bugs (a transposed matrix, a swapped argument, a
// gradient summed over the wrong axis look right on them), so every test tensor here
// has a different value at every index, from a closed form.
#pragma once

#include <cmath>

#include "tensor.h"

namespace course::test {

/// Values of order 1 and both signs, all different: offset + amplitude * sin(1.3 i + 0.7 + phase).
inline Tensor wavy(const Shape& shape, float phase = 0.0f, float amplitude = 1.0f,
                   float offset = 0.0f) {
  Tensor t = Tensor::empty(shape);
  float* x = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) {
    x[i] = offset + amplitude * static_cast<float>(std::sin(1.3 * i + 0.7 + phase));
  }
  return t;
}

/// Values in [0.5, 1.5]: safe for log and as denominators.
inline Tensor positive(const Shape& shape, float phase = 0.0f) {
  return wavy(shape, phase, 0.5f, 1.0f);
}

/// Values with |x| in [0.2, 1], both signs: safe for relu (no kink within a step).
inline Tensor away_from_zero(const Shape& shape, float phase = 0.0f) {
  Tensor t = wavy(shape, phase);
  for (float& v : t.span()) v = (v >= 0 ? 1.0f : -1.0f) * (0.2f + 0.8f * std::fabs(v));
  return t;
}

/// Class indices in [0, classes), as floats: (3 i + 1) mod classes.
inline Tensor class_targets(int64_t rows, int64_t classes) {
  Tensor t = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i) t.data()[i] = static_cast<float>((3 * i + 1) % classes);
  return t;
}

}  // namespace course::test
