// ops_matrix.cpp: lesson 06, part 3b: backward formulas of matrix, shape and reduction ops.
//
// The matrix rule, for C = A B with A [m,k], B [k,n] and G = dL/dC [m,n]:
//
//     dL/dA = G Bᵀ   [m,n][n,k] = [m,k]        dL/dB = Aᵀ G   [k,m][m,n] = [k,n]
//
// Check the shapes and you can rederive it any time. matmul(x, y, trans_x, trans_y) of
// tensor_ops.h multiplies by a transpose without copying it.
#include "error.h"
#include "node.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {
namespace {

struct MatmulBackward final : Node {
  Tensor a, b;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: dA = G Bᵀ and dB = Aᵀ G (use the transpose flags of matmul)
    Tensor ga, gb;
    if (needs_input_grad(0)) ga = matmul(g, b, false, true);
    if (needs_input_grad(1)) gb = matmul(a, g, true, false);
    return {ga, gb};
    // END SOLUTION
  }
  std::string name() const override { return "MatmulBackward"; }
};

// y = x wᵀ + b: x [B, in], w [out, in], b [out], y and g [B, out].
struct LinearBackward final : Node {
  Tensor x, w;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: dx = g w [B,in], dw = gᵀ x [out,in], db = the sum of g's rows [out]
    Tensor gx, gw, gb;
    if (needs_input_grad(0)) gx = matmul(g, w);
    if (needs_input_grad(1)) gw = matmul(g, x, true, false);
    if (needs_input_grad(2)) gb = sum_rows(g);
    return {gx, gw, gb};
    // END SOLUTION
  }
  std::string name() const override { return "LinearBackward"; }
};

struct TransposeBackward final : Node {
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: transposing is its own inverse
    return {transpose(g)};
    // END SOLUTION
  }
  std::string name() const override { return "TransposeBackward"; }
};

struct ReshapeBackward final : Node {
  Shape input_shape;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: the same numbers, back in the input's shape
    return {g.reshape(input_shape)};
    // END SOLUTION
  }
  std::string name() const override { return "ReshapeBackward"; }
};

struct SumBackward final : Node {
  Shape input_shape;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: every element has weight 1: spread the scalar g over input_shape
    return {expand_scalar(g, input_shape)};
    // END SOLUTION
  }
  std::string name() const override { return "SumBackward"; }
};

struct MeanBackward final : Node {
  Shape input_shape;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: like sum, with weight 1/n for each of the n elements
    return {expand_scalar(g, input_shape, 1.0f / static_cast<float>(shape_numel(input_shape)))};
    // END SOLUTION
  }
  std::string name() const override { return "MeanBackward"; }
};

}  // namespace

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

}  // namespace course
