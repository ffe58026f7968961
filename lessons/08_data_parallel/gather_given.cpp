// gather_given.cpp: lesson 08, given: gather's result wired into autograd (see gather.h).
// The concatenation and GatherBackward's steps are the exercise (gather.cpp).
#include <memory>

#include "gather.h"

namespace course {

Variable gather_result(const Tensor& joined, const std::vector<Variable>& outputs,
                       const GatherContext& context) {
  Variable result(joined);
  bool any_requires_grad = false;
  for (const Variable& out : outputs) any_requires_grad |= out.requires_grad();
  if (grad_mode_enabled() && any_requires_grad) {
    connect_node(result, std::make_shared<GatherBackward>(outputs, context), {});
  }
  return result;
}

}  // namespace course
