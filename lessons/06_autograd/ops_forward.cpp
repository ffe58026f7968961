// ops_forward.cpp: lesson 06, given: the forward functions of the ops of ops.h. Each one
// computes its result with the kernels of tensor_ops.h, checks the shapes, and records its
// Node (backward_nodes.h) with what the backward formula needs. The formulas, the Nodes'
// apply(), are the exercise (ops_elementwise.cpp, ops_matrix.cpp, ops_loss.cpp).
#include "backward_nodes.h"
#include "error.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {

namespace {

bool is_bias_of(const Variable& b, const Variable& a) {
  return b.dim() == 1 && a.dim() >= 2 && a.size(-1) == b.size(0);
}

}  // namespace

Variable add(const Variable& a, const Variable& b) {
  const bool broadcast = a.shape() != b.shape() && is_bias_of(b, a);
  if (a.shape() != b.shape() && !broadcast) {
    throw ConfigError("add: shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                      " differ, and b is not a bias [n] for rows of [..., n]");
  }
  Variable out(broadcast ? add_rows(a.data(), b.data()) : add(a.data(), b.data()));
  if (auto node = record<AddBackward>(out, {a, b})) node->broadcast_b = broadcast;
  return out;
}

Variable sub(const Variable& a, const Variable& b) {
  Variable out(sub(a.data(), b.data()));
  record<SubBackward>(out, {a, b});
  return out;
}

Variable mul(const Variable& a, const Variable& b) {
  Variable out(mul(a.data(), b.data()));
  if (auto node = record<MulBackward>(out, {a, b})) {
    node->a = a.data();
    node->b = b.data();
  }
  return out;
}

Variable div(const Variable& a, const Variable& b) {
  Variable out(div(a.data(), b.data()));
  if (auto node = record<DivBackward>(out, {a, b})) {
    node->b = b.data();
    node->out = out.data();
  }
  return out;
}

Variable neg(const Variable& x) {
  Variable out(neg(x.data()));
  record<NegBackward>(out, {x});
  return out;
}

Variable scale(const Variable& x, float s) {
  Variable out(scale(x.data(), s));
  if (auto node = record<ScaleBackward>(out, {x})) node->s = s;
  return out;
}

Variable exp(const Variable& x) {
  Variable out(exp(x.data()));
  if (auto node = record<ExpBackward>(out, {x})) node->out = out.data();
  return out;
}

Variable log(const Variable& x) {
  Variable out(log(x.data()));
  if (auto node = record<LogBackward>(out, {x})) node->x = x.data();
  return out;
}

Variable relu(const Variable& x) {
  Variable out(relu_forward(x.data()));
  if (auto node = record<ReluBackward>(out, {x})) node->out = out.data();
  return out;
}

Variable matmul(const Variable& a, const Variable& b) {
  Variable out(matmul(a.data(), b.data()));
  if (auto node = record<MatmulBackward>(out, {a, b})) {
    node->a = a.data();
    node->b = b.data();
  }
  return out;
}

Variable linear(const Variable& x, const Variable& w, const Variable& b) {
  if (x.dim() != 2 || w.dim() != 2 || x.size(1) != w.size(1) ||
      (b.defined() && (b.dim() != 1 || b.size(0) != w.size(0)))) {
    throw ConfigError("linear: input " + shape_str(x.shape()) + ", weight " + shape_str(w.shape()) +
                      ", bias " + (b.defined() ? shape_str(b.shape()) : std::string("none")) +
                      "; expected [B, in], [out, in], [out]");
  }
  // y = b broadcast to every row, then y += x wᵀ in the same gemm call (beta = 1).
  Tensor y = b.defined() ? broadcast_rows(b.data(), x.size(0))
                         : Tensor::empty({x.size(0), w.size(0)}, x.device());
  gemm(x.data(), false, w.data(), true, 1.0f, b.defined() ? 1.0f : 0.0f, y);
  Variable out(y);
  if (auto node = record<LinearBackward>(out, {x, w, b})) {
    node->x = x.data();
    node->w = w.data();
  }
  return out;
}

Variable transpose(const Variable& x) {
  Variable out(transpose(x.data()));
  record<TransposeBackward>(out, {x});
  return out;
}

Variable reshape(const Variable& x, const Shape& shape) {
  Variable out(x.data().reshape(shape));
  if (auto node = record<ReshapeBackward>(out, {x})) node->input_shape = x.shape();
  return out;
}

Variable sum(const Variable& x) {
  Variable out(sum(x.data()));
  if (auto node = record<SumBackward>(out, {x})) node->input_shape = x.shape();
  return out;
}

Variable mean(const Variable& x) {
  Variable out(mean(x.data()));
  if (auto node = record<MeanBackward>(out, {x})) node->input_shape = x.shape();
  return out;
}

Variable log_softmax(const Variable& x) {
  Variable out(log_softmax_forward(x.data()));
  if (auto node = record<LogSoftmaxBackward>(out, {x})) node->out = out.data();
  return out;
}

Variable nll_loss(const Variable& logp, const Tensor& targets) {
  Variable out(nll_loss_forward(logp.data(), targets));
  if (auto node = record<NllLossBackward>(out, {logp})) {
    node->targets = targets;
    node->classes = logp.size(1);
  }
  return out;
}

Variable cross_entropy(const Variable& logits, const Tensor& targets) {
  return nll_loss(log_softmax(logits), targets);
}

}  // namespace course
