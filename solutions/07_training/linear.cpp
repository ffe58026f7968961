// linear.cpp: lesson 07, parts 1 and 5: the Linear layer (see linear.h for the initialisation).
#include "linear.h"

#include <cmath>

#include "error.h"
#include "ops.h"

namespace course {

Linear::Linear(int64_t in_features, int64_t out_features, Rng& rng, bool bias)
    : in_features_(in_features), out_features_(out_features) {
  if (in_features < 1 || out_features < 1) {
    throw ConfigError("Linear(" + std::to_string(in_features) + ", " +
                      std::to_string(out_features) + "): both sizes must be at least 1");
  }
  weight_ = register_parameter("weight", Tensor::empty({out_features, in_features}));
  if (bias) bias_ = register_parameter("bias", Tensor::empty({out_features}));
  reset_parameters(rng);
}

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

std::string Linear::describe() const {
  return "Linear(in_features=" + std::to_string(in_features_) +
         ", out_features=" + std::to_string(out_features_) +
         ", bias=" + (bias_.defined() ? "true" : "false") + ")";
}

}  // namespace course
