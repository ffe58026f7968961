// linear.cpp: lesson 07, parts 1 and 5: the Linear layer (see linear.h for the initialisation).
#include "linear.h"

#include <cmath>

#include "error.h"
#include "ops.h"

namespace course {

void Linear::reset_parameters(Rng& rng) {
  // BEGIN SOLUTION: bound = 1/sqrt(in_features); weight then bias, each uniform in [-bound, bound)
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features_));
  for (float& w : weight_.data().span()) w = rng.uniform(-bound, bound);
  if (bias_.defined()) {
    for (float& b : bias_.data().span()) b = rng.uniform(-bound, bound);
  }
  // END SOLUTION
}

Variable Linear::forward(const Variable& x) {
  // BEGIN SOLUTION: one call to the linear op of lesson 06 (ops.h)
  return linear(x, weight_, bias_);
  // END SOLUTION
}

}  // namespace course
