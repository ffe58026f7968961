// gradcheck.h: lesson 06, checking backward formulas by central differences (given).
//
//   GradcheckResult r = gradcheck([](const std::vector<Variable>& v) { return mul(v[0], v[1]); },
//                                 {a, b});
//   if (!r.ok) std::cout << r.detail;
//
// The analytic gradient (what backward() computes) is compared with a numerical one. To
// test every output element at once, f's output y is reduced to a scalar with fixed
// pseudo-random weights w (index-dependent, never all ones):
//
//     L(x) = sum_k w_k y_k(x)
//     dL/dx_j ≈ (L(x + h e_j) - L(x - h e_j)) / 2h        (error O(h²), not O(h))
//
// Everything is float32, so h cannot be tiny: the rounding error of L grows like
// 1e-7 |L| / h. The defaults (h = 1e-3, tolerance 1e-2 absolute plus 1e-2 relative) pass
// for correct formulas on inputs of order 1 and fail for wrong ones by orders of magnitude.
// Keep inputs away from kinks (relu at 0) and poles (log and div near 0).
//
// What this is not: a proof. It checks one point; the tests check several.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor.h"
#include "variable.h"

namespace course {

struct GradcheckOptions {
  float step = 1e-3f;  ///< h
  double atol = 1e-2;
  double rtol = 1e-2;
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0;  ///< the largest |analytic - numerical| over all elements
  std::string detail;        ///< the first mismatch: input, element, both values
};

/// Checks dL/d(input i) for every input, for f evaluated at `inputs` (CPU tensors, not
/// modified). f must be deterministic and must not keep state between calls.
GradcheckResult gradcheck(const std::function<Variable(const std::vector<Variable>&)>& f,
                          const std::vector<Tensor>& inputs, const GradcheckOptions& options = {});

}  // namespace course
