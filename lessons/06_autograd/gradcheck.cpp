// gradcheck.cpp: lesson 06, finite-difference gradient check (given; see gradcheck.h).
#include "gradcheck.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "error.h"
#include "ops.h"
#include "rng.h"
#include "tensor_ops.h"

namespace course {
namespace {

// sum_k w_k y_k in double, on the host.
double weighted_sum(const Tensor& y, const std::vector<float>& w) {
  const std::vector<float> values = y.to_vector();
  double total = 0;
  for (size_t k = 0; k < values.size(); ++k) total += static_cast<double>(w[k]) * values[k];
  return total;
}

}  // namespace

GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& f,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options) {
  // Analytic: backward of L = sum(w * f(x)) from fresh leaves.
  std::vector<Variable> leaves;
  for (const Tensor& t : inputs) leaves.emplace_back(t.clone(), /*requires_grad=*/true);
  const Variable y = f(leaves);
  Rng rng(/*seed=*/1234);
  std::vector<float> w(static_cast<size_t>(y.numel()));
  for (float& v : w) v = rng.uniform(0.5f, 1.5f) * (rng.below(2) ? 1.0f : -1.0f);
  const Tensor w_tensor = Tensor::from_vector(y.shape(), w, y.device());
  sum(mul(y, Variable(w_tensor))).backward();

  GradcheckResult result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor analytic = leaves[i].grad();
    // Numerical: perturb one element at a time of a private copy of the inputs.
    std::vector<Variable> probe;
    for (const Tensor& t : inputs) probe.emplace_back(t.clone());
    float* x = probe[i].data().data();
    const std::vector<float> a =
        analytic.defined() ? analytic.to_vector() : std::vector<float>(inputs[i].numel(), 0.0f);
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      const float saved = x[j];
      const float plus = saved + options.step;
      const float minus = saved - options.step;
      double l_plus, l_minus;
      {
        NoGradGuard no_grad;
        x[j] = plus;
        l_plus = weighted_sum(f(probe).data(), w);
        x[j] = minus;
        l_minus = weighted_sum(f(probe).data(), w);
      }
      x[j] = saved;
      // The step actually taken, after float rounding of x ± h.
      const double numerical = (l_plus - l_minus) / (static_cast<double>(plus) - minus);
      const double error = std::fabs(a[j] - numerical);
      result.max_abs_error = std::max(result.max_abs_error, error);
      if ((error > options.atol + options.rtol * std::fabs(numerical) || std::isnan(error)) &&
          result.ok) {
        result.ok = false;
        std::ostringstream out;
        out << "input " << i << " " << shape_str(inputs[i].shape()) << ", element " << j
            << ": backward gives " << a[j] << ", central differences give " << numerical;
        result.detail = out.str();
      }
    }
  }
  return result;
}

}  // namespace course
