// backward_nodes.h: lesson 06, the Nodes of the ops of ops.h: what each one saves on the
// forward pass (its fields, set by the forward functions of ops_forward.cpp) and its
// backward formula, apply(), which you write in ops_elementwise.cpp, ops_matrix.cpp and
// ops_loss.cpp. In apply(g), g is dL/d(result), with the result's shape; return one
// gradient per input, in input order, and leave an input's gradient undefined when
// !needs_input_grad(i). A node that saves tensors lists them in saved_tensors() too (node.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node.h"
#include "tensor.h"

namespace course {

// ---- Elementwise (ops_elementwise.cpp) -------------------------------------------------
// c = a + b, or a + bias broadcast over rows.
struct AddBackward final : Node {
  bool broadcast_b = false;  // b was a bias [n] added to every row of a [..., n]
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "AddBackward"; }
};

struct SubBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "SubBackward"; }
};

struct MulBackward final : Node {
  Tensor a, b;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "MulBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {a, b}; }
};

struct DivBackward final : Node {
  Tensor b, out;  // out = a / b
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "DivBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {b, out}; }
};

struct NegBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "NegBackward"; }
};

struct ScaleBackward final : Node {
  float s = 1;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "ScaleBackward"; }
};

struct ExpBackward final : Node {
  Tensor out;  // e^x: its own derivative, so save the result rather than x
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "ExpBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {out}; }
};

struct LogBackward final : Node {
  Tensor x;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "LogBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {x}; }
};

struct ReluBackward final : Node {
  Tensor out;  // max(x, 0) is > 0 exactly where x is
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "ReluBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {out}; }
};

// ---- Matrices, shapes and reductions (ops_matrix.cpp) ----------------------------------
struct MatmulBackward final : Node {
  Tensor a, b;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "MatmulBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {a, b}; }
};

// y = x wᵀ + b: x [B, in], w [out, in], b [out], y and g [B, out].
struct LinearBackward final : Node {
  Tensor x, w;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "LinearBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {x, w}; }
};

struct TransposeBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "TransposeBackward"; }
};

struct ReshapeBackward final : Node {
  Shape input_shape;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "ReshapeBackward"; }
};

struct SumBackward final : Node {
  Shape input_shape;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "SumBackward"; }
};

struct MeanBackward final : Node {
  Shape input_shape;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "MeanBackward"; }
};

// ---- Losses (ops_loss.cpp) -------------------------------------------------------------
struct LogSoftmaxBackward final : Node {
  Tensor out;  // the log-probabilities
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "LogSoftmaxBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {out}; }
};

struct NllLossBackward final : Node {
  Tensor targets;
  int64_t classes = 0;
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "NllLossBackward"; }
  std::vector<Tensor> saved_tensors() const override { return {targets}; }
};

}  // namespace course
