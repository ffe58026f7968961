// grad_clip.cpp: clip_grad_norm and grad_norm (see grad_clip.h).
#include "grad_clip.h"

#include <cmath>
#include <string>

#include "error.h"
#include "tensor_ops.h"

namespace course {

double grad_norm(const std::vector<Variable>& params) {
  double sum_sq = 0;
  for (const Variable& p : params) {
    const Tensor grad = p.grad();
    if (!grad.defined()) continue;
    for (const float g : grad.to_vector()) sum_sq += static_cast<double>(g) * g;
  }
  return std::sqrt(sum_sq);
}

double clip_grad_norm(const std::vector<Variable>& params, double max_norm) {
  if (!(max_norm > 0)) {
    throw ConfigError("clip_grad_norm: max_norm must be > 0 (got " + std::to_string(max_norm) +
                      ")");
  }
  const double total = grad_norm(params);
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0) {
    for (const Variable& p : params) {
      const Tensor grad = p.grad();
      if (grad.defined()) scale_(grad, static_cast<float>(coef));
    }
  }
  return total;
}

}  // namespace course
