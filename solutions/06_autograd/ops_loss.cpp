// ops_loss.cpp: lesson 06, part 3c: backward formulas of log_softmax and the NLL loss.
//
// For one row x with y = log_softmax(x), y_j = x_j - log sum_k e^{x_k}:
//
//     dy_j/dx_i = [i == j] - softmax(x)_i       so   dL/dx_i = g_i - softmax(x)_i sum_j g_j
//
// and softmax(x) = e^y, which is why the node saves its result. For the mean NLL over B
// rows, L = -(1/B) sum_b logp[b, t_b], only the target entry of each row gets a gradient:
// -1/B. Composed, cross_entropy's gradient is (softmax(x) - onehot(t)) / B.
#include "backward_nodes.h"
#include "error.h"
#include "tensor_ops.h"

namespace course {

std::vector<Tensor> LogSoftmaxBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: g - softmax * (row sum of g): log_softmax_backward of tensor_ops.h
  return {log_softmax_backward(g, out)};
  // END SOLUTION
}

std::vector<Tensor> NllLossBackward::apply(const Tensor& g) {
  // BEGIN SOLUTION: -g/B at each row's target, 0 elsewhere: nll_loss_backward of tensor_ops.h
  return {nll_loss_backward(g, targets, classes)};
  // END SOLUTION
}

}  // namespace course
