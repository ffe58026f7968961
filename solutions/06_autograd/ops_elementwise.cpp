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
  // BEGIN SOLUTION: dc/da = dc/db = 1; a broadcast bias collects the gradient of every row
  Tensor gb;
  if (needs_input_grad(1)) gb = broadcast_b ? sum_rows(g) : g;
  return {g, gb};
  // END SOLUTION
}

std::vector<Tensor> SubBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(a - b)/da = 1, d(a - b)/db = -1
  return {g, needs_input_grad(1) ? neg(g) : Tensor()};
  // END SOLUTION
}

std::vector<Tensor> MulBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(a*b)/da = b and d(a*b)/db = a, elementwise
  return {needs_input_grad(0) ? mul(g, b) : Tensor(), needs_input_grad(1) ? mul(g, a) : Tensor()};
  // END SOLUTION
}

std::vector<Tensor> DivBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(a/b)/da = 1/b and d(a/b)/db = -a/b^2 = -out/b
  Tensor ga, gb;
  if (needs_input_grad(0)) ga = div(g, b);
  if (needs_input_grad(1)) gb = neg(div(mul(g, out), b));
  return {ga, gb};
  // END SOLUTION
}

std::vector<Tensor> NegBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(-x)/dx = -1
  return {neg(g)};
  // END SOLUTION
}

std::vector<Tensor> ScaleBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(s*x)/dx = s
  return {scale(g, s)};
  // END SOLUTION
}

std::vector<Tensor> ExpBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(e^x)/dx = e^x, which is the saved result
  return {mul(g, out)};
  // END SOLUTION
}

std::vector<Tensor> LogBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: d(ln x)/dx = 1/x
  return {div(g, x)};
  // END SOLUTION
}

std::vector<Tensor> ReluBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: the gradient passes where the result is positive, and is 0 elsewhere
  return {relu_backward(g, out)};
  // END SOLUTION
}

}  // namespace course
