// ops_elementwise.cpp: lesson 06, part 3a: backward formulas of the elementwise ops.
//
// Each op is a forward function (given) and a Node whose apply() you write. `g` is always
// dL/d(result), with the result's shape; return one gradient per input, in input order.
// The Tensor functions of common/tensor/tensor_ops.h (add, mul, div, neg, scale, relu_backward,
// sum_rows, ...) are your vocabulary. Skip an input's gradient (leave it undefined) when
// !needs_input_grad(i): nobody wants it, and it can be expensive.
#include "error.h"
#include "node.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {
namespace {

// c = a + b, or a + bias broadcast over rows.
struct AddBackward final : Node {
  bool broadcast_b = false;  // b was a bias [n] added to every row of a [..., n]
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: dc/da = dc/db = 1; a broadcast bias collects the gradient of every row
    Tensor gb;
    if (needs_input_grad(1)) gb = broadcast_b ? sum_rows(g) : g;
    return {g, gb};
    // END SOLUTION
  }
  std::string name() const override { return "AddBackward"; }
};

struct SubBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(a - b)/da = 1, d(a - b)/db = -1
    return {g, needs_input_grad(1) ? neg(g) : Tensor()};
    // END SOLUTION
  }
  std::string name() const override { return "SubBackward"; }
};

struct MulBackward final : Node {
  Tensor a, b;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(a*b)/da = b and d(a*b)/db = a, elementwise
    return {needs_input_grad(0) ? mul(g, b) : Tensor(), needs_input_grad(1) ? mul(g, a) : Tensor()};
    // END SOLUTION
  }
  std::string name() const override { return "MulBackward"; }
};

struct DivBackward final : Node {
  Tensor b, out;  // out = a / b
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(a/b)/da = 1/b and d(a/b)/db = -a/b^2 = -out/b
    Tensor ga, gb;
    if (needs_input_grad(0)) ga = div(g, b);
    if (needs_input_grad(1)) gb = neg(div(mul(g, out), b));
    return {ga, gb};
    // END SOLUTION
  }
  std::string name() const override { return "DivBackward"; }
};

struct NegBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(-x)/dx = -1
    return {neg(g)};
    // END SOLUTION
  }
  std::string name() const override { return "NegBackward"; }
};

struct ScaleBackward final : Node {
  float s = 1;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(s*x)/dx = s
    return {scale(g, s)};
    // END SOLUTION
  }
  std::string name() const override { return "ScaleBackward"; }
};

struct ExpBackward final : Node {
  Tensor out;  // e^x: its own derivative, so save the result rather than x
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(e^x)/dx = e^x, which is the saved result
    return {mul(g, out)};
    // END SOLUTION
  }
  std::string name() const override { return "ExpBackward"; }
};

struct LogBackward final : Node {
  Tensor x;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: d(ln x)/dx = 1/x
    return {div(g, x)};
    // END SOLUTION
  }
  std::string name() const override { return "LogBackward"; }
};

struct ReluBackward final : Node {
  Tensor out;  // max(x, 0) is > 0 exactly where x is
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: the gradient passes where the result is positive, and is 0 elsewhere
    return {relu_backward(g, out)};
    // END SOLUTION
  }
  std::string name() const override { return "ReluBackward"; }
};

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

}  // namespace course
