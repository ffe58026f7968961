// ops_elementwise.cpp: lesson 06, part 3a: backward formulas of the elementwise ops.
//
// Each op is a forward function (given, in ops_forward.cpp) and a Node (backward_nodes.h)
// whose apply() you write. `g` is always dL/d(result), with the result's shape; return
// one gradient per input, in input order.
// The Tensor functions of common/tensor/tensor_ops.h (add, mul, div, neg, scale, relu_backward,
// sum_rows, ...) are your vocabulary. Skip an input's gradient (leave it undefined) when
// !needs_input_grad(i): nobody wants it, and it can be expensive.
#include "backward_nodes.h"
#include "error.h"
#include "tensor_ops.h"

namespace course {

std::vector<Tensor> AddBackward::apply(const Tensor& g) {
  // TODO(lesson06): dc/da = dc/db = 1; a broadcast bias collects the gradient of every row
  COURSE_TODO();
}

std::vector<Tensor> SubBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(a - b)/da = 1, d(a - b)/db = -1
  COURSE_TODO();
}

std::vector<Tensor> MulBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(a*b)/da = b and d(a*b)/db = a, elementwise
  COURSE_TODO();
}

std::vector<Tensor> DivBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(a/b)/da = 1/b and d(a/b)/db = -a/b^2 = -out/b
  COURSE_TODO();
}

std::vector<Tensor> NegBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(-x)/dx = -1
  COURSE_TODO();
}

std::vector<Tensor> ScaleBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(s*x)/dx = s
  COURSE_TODO();
}

std::vector<Tensor> ExpBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(e^x)/dx = e^x, which is the saved result
  COURSE_TODO();
}

std::vector<Tensor> LogBackward::apply(const Tensor& g) {
  // TODO(lesson06): d(ln x)/dx = 1/x
  COURSE_TODO();
}

std::vector<Tensor> ReluBackward::apply(const Tensor& g) {
  // TODO(lesson06): the gradient passes where the result is positive, and is 0 elsewhere
  COURSE_TODO();
}

}  // namespace course
