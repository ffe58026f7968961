// ops_loss.cpp: lesson 06, part 3c: backward formulas of log_softmax and the NLL loss.
//
// For one row x with y = log_softmax(x), y_j = x_j - log sum_k e^{x_k}:
//
//     dy_j/dx_i = [i == j] - softmax(x)_i       so   dL/dx_i = g_i - softmax(x)_i sum_j g_j
//
// and softmax(x) = e^y, which is why the node saves its result. For the mean NLL over B
// rows, L = -(1/B) sum_b logp[b, t_b], only the target entry of each row gets a gradient:
// -1/B. Composed, cross_entropy's gradient is (softmax(x) - onehot(t)) / B.
#include "error.h"
#include "node.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {
namespace {

struct LogSoftmaxBackward final : Node {
  Tensor out;  // the log-probabilities
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: g - softmax * (row sum of g): log_softmax_backward of tensor_ops.h
    return {log_softmax_backward(g, out)};
    // END SOLUTION
  }
  std::string name() const override { return "LogSoftmaxBackward"; }
};

struct NllLossBackward final : Node {
  Tensor targets;
  int64_t classes = 0;
  std::vector<Tensor> apply(const Tensor& g) override {
    // BEGIN SOLUTION: -g/B at each row's target, 0 elsewhere: nll_loss_backward of tensor_ops.h
    return {nll_loss_backward(g, targets, classes)};
    // END SOLUTION
  }
  std::string name() const override { return "NllLossBackward"; }
};

}  // namespace

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
