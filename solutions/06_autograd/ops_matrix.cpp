// ops_matrix.cpp: lesson 06, part 3b: backward formulas of matrix, shape and reduction ops.
//
// The matrix rule, for C = A B with A [m,k], B [k,n] and G = dL/dC [m,n]:
//
//     dL/dA = G Bᵀ   [m,n][n,k] = [m,k]        dL/dB = Aᵀ G   [k,m][m,n] = [k,n]
//
// Check the shapes and you can rederive it any time. matmul(x, y, trans_x, trans_y) of
// tensor_ops.h multiplies by a transpose without copying it.
#include "backward_nodes.h"
#include "error.h"
#include "tensor_ops.h"

namespace course {

std::vector<Tensor> MatmulBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: dA = G Bᵀ and dB = Aᵀ G (use the transpose flags of matmul)
  Tensor ga, gb;
  if (needs_input_grad(0)) ga = matmul(g, b, false, true);
  if (needs_input_grad(1)) gb = matmul(a, g, true, false);
  return {ga, gb};
  // END SOLUTION
}

std::vector<Tensor> LinearBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: dx = g w [B,in], dw = gᵀ x [out,in], db = the sum of g's rows [out]
  Tensor gx, gw, gb;
  if (needs_input_grad(0)) gx = matmul(g, w);
  if (needs_input_grad(1)) gw = matmul(g, x, true, false);
  if (needs_input_grad(2)) gb = sum_rows(g);
  return {gx, gw, gb};
  // END SOLUTION
}

std::vector<Tensor> TransposeBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: transposing is its own inverse
  return {transpose(g)};
  // END SOLUTION
}

std::vector<Tensor> ReshapeBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: the same numbers, back in the input's shape
  return {g.reshape(input_shape)};
  // END SOLUTION
}

std::vector<Tensor> SumBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: every element has weight 1: spread the scalar g over input_shape
  return {expand_scalar(g, input_shape)};
  // END SOLUTION
}

std::vector<Tensor> MeanBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: like sum, with weight 1/n for each of the n elements
  return {expand_scalar(g, input_shape, 1.0f / static_cast<float>(shape_numel(input_shape)))};
  // END SOLUTION
}

}  // namespace course
