// ops.h: lesson 06, the differentiable operations on Variables.
//
// Each op computes its result with the kernels of common/tensor/tensor_ops.h and, when it must
// (node.h: grad mode on and an input requires grad), records a Node whose apply() is the
// op's backward formula. The forward functions are given (ops_forward.cpp), the Nodes
// declared in backward_nodes.h; you write the formulas:
//
//   ops_elementwise.cpp   add (with bias broadcasting), sub, mul, div, neg, scale, exp,
//                         log, relu
//   ops_matrix.cpp        matmul, linear, transpose, reshape, sum, mean
//   ops_loss.cpp          log_softmax, nll_loss, cross_entropy
//
// The rule every formula follows (the chain rule, for y = f(x) and a scalar loss L):
//   dL/dx = (dy/dx)ᵀ · dL/dy        and dL/dx has the shape of x.
//
// Shapes: elementwise ops need equal shapes, except add(a, b) with b of shape [n] and a
// of shape [..., n] (a bias, broadcast over the rows of a). Matrix ops take 2-D operands.
// A shape mismatch is a ConfigError naming the op and both shapes.
#pragma once

#include "tensor.h"
#include "variable.h"

namespace course {

// ---- Elementwise (ops_elementwise.cpp) --------------------------------------------------
/// a + b; b may be a bias of shape [n] broadcast over a of shape [..., n].
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable neg(const Variable& x);
/// s * x for a constant s.
Variable scale(const Variable& x, float s);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable relu(const Variable& x);

// ---- Matrices, shapes and reductions (ops_matrix.cpp) ----------------------------------
/// a [m,k] times b [k,n] = [m,n].
Variable matmul(const Variable& a, const Variable& b);
/// x wᵀ + b (torch.nn.functional.linear): x [B, in], w [out, in], b [out] or undefined.
/// One node, and no transposed copy of w: the matmul share of lesson 07 depends on it.
Variable linear(const Variable& x, const Variable& w, const Variable& b);
/// The transpose of a 2-D x.
Variable transpose(const Variable& x);
/// The same numbers in another shape (a view; one dimension may be -1).
Variable reshape(const Variable& x, const Shape& shape);
/// The sum of all elements, a scalar (shape {}).
Variable sum(const Variable& x);
/// The mean of all elements, a scalar.
Variable mean(const Variable& x);

// ---- Losses (ops_loss.cpp) --------------------------------------------------------------
/// log(softmax(x)) along the last dimension of a 2-D x, computed stably.
Variable log_softmax(const Variable& x);
/// -(1/B) sum_i logp[i, targets[i]]: logp [B, C] (log-probabilities), targets [B] class
/// indices as floats. The targets get no gradient.
Variable nll_loss(const Variable& logp, const Tensor& targets);
/// nll_loss(log_softmax(logits), targets), as torch.nn.functional.cross_entropy.
Variable cross_entropy(const Variable& logits, const Tensor& targets);

// ---- Operators ---------------------------------------------------------------------------
inline Variable operator+(const Variable& a, const Variable& b) {
  return add(a, b);
}
inline Variable operator-(const Variable& a, const Variable& b) {
  return sub(a, b);
}
inline Variable operator*(const Variable& a, const Variable& b) {
  return mul(a, b);
}
inline Variable operator/(const Variable& a, const Variable& b) {
  return div(a, b);
}
inline Variable operator-(const Variable& x) {
  return neg(x);
}
inline Variable operator*(const Variable& x, float s) {
  return scale(x, s);
}
inline Variable operator*(float s, const Variable& x) {
  return scale(x, s);
}

}  // namespace course
