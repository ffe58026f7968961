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
  // TODO(lesson06): dA = G Bᵀ and dB = Aᵀ G (use the transpose flags of matmul)
  COURSE_TODO();
}

std::vector<Tensor> LinearBackward::apply(const Tensor& g) {
  // TODO(lesson06): dx = g w [B,in], dw = gᵀ x [out,in], db = the sum of g's rows [out]
  COURSE_TODO();
}

std::vector<Tensor> TransposeBackward::apply(const Tensor& g) {
  // TODO(lesson06): transposing is its own inverse
  COURSE_TODO();
}

std::vector<Tensor> ReshapeBackward::apply(const Tensor& g) {
  // TODO(lesson06): the same numbers, back in the input's shape
  COURSE_TODO();
}

std::vector<Tensor> SumBackward::apply(const Tensor& g) {
  // TODO(lesson06): every element has weight 1: spread the scalar g over input_shape
  COURSE_TODO();
}

std::vector<Tensor> MeanBackward::apply(const Tensor& g) {
  // TODO(lesson06): like sum, with weight 1/n for each of the n elements
  COURSE_TODO();
}

}  // namespace course
