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
  // TODO(lesson07): bound = 1/sqrt(in_features); weight then bias, each uniform in [-bound, bound)
  COURSE_TODO();
}

Variable Linear::forward(const Variable& x) {
  // TODO(lesson07): one call to the linear op of lesson 06 (ops.h)
  COURSE_TODO();
}

std::string Linear::describe() const {
  return "Linear(in_features=" + std::to_string(in_features_) +
         ", out_features=" + std::to_string(out_features_) +
         ", bias=" + (bias_.defined() ? "true" : "false") + ")";
}

}  // namespace course
