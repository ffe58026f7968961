// linear_given.cpp: lesson 07, given: Linear's constructor and describe(). Its
// initialisation and forward pass are the exercise (linear.cpp).
#include "error.h"
#include "linear.h"

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

std::string Linear::describe() const {
  return "Linear(in_features=" + std::to_string(in_features_) +
         ", out_features=" + std::to_string(out_features_) +
         ", bias=" + (bias_.defined() ? "true" : "false") + ")";
}

}  // namespace course
