// gradcheck_test.cpp: lesson 06, the gradient checker itself, and the graph pictures.
// A checker that passes everything is worse than none: it must fail a wrong formula.
//
//   ./build/solutions/test_06 --gtest_filter='Gradcheck*:Graph*'
#include "gradcheck.h"

#include <gtest/gtest.h>

#include "graph_dot.h"
#include "inputs.h"
#include "node.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {
namespace {

using test::class_targets;
using test::wavy;

// y = x², with a backward that forgets the factor 2 (a classic slip).
struct SquareWrongBackward final : Node {
  Tensor x;
  std::vector<Tensor> apply(const Tensor& g) override { return {mul(g, x)}; }
  std::string name() const override { return "SquareWrongBackward"; }
};

Variable square_wrong(const Variable& x) {
  Variable out(mul(x.data(), x.data()));
  if (auto node = record<SquareWrongBackward>(out, {x})) node->x = x.data();
  return out;
}

TEST(Gradcheck, FailsAWrongFormulaAndSaysWhere) {
  const GradcheckResult r =
      gradcheck([](const std::vector<Variable>& v) { return square_wrong(v[0]); }, {wavy({4})});
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.max_abs_error, 0.1);
  EXPECT_NE(r.detail.find("input 0"), std::string::npos) << r.detail;
}

TEST(Gradcheck, PassesTheRightFormula) {
  const GradcheckResult r =
      gradcheck([](const std::vector<Variable>& v) { return mul(v[0], v[0]); }, {wavy({4})});
  EXPECT_TRUE(r.ok) << r.detail;
  EXPECT_LT(r.max_abs_error, 1e-2);
}

TEST(Gradcheck, LeavesItsInputsUnchanged) {
  const Tensor a = wavy({3, 2});
  const std::vector<float> before = a.to_vector();
  gradcheck([](const std::vector<Variable>& v) { return exp(v[0]); }, {a});
  EXPECT_EQ(a.to_vector(), before);
}

TEST(Graph, TextAndDotShowEveryNodeOfATwoLayerNetwork) {
  Variable w1(wavy({4, 3}), true), b1(wavy({4}), true), w2(wavy({2, 4}), true);
  w1.set_name("fc1.weight");
  b1.set_name("fc1.bias");
  w2.set_name("fc2.weight");
  const Variable x(wavy({5, 3}, 1.0f));
  const Variable loss =
      cross_entropy(linear(relu(linear(x, w1, b1)), w2, Variable()), class_targets(5, 2));
  const std::string text = graph_to_text(loss);
  for (const char* want :
       {"NllLossBackward", "LogSoftmaxBackward", "LinearBackward", "ReluBackward",
        "fc1.weight [4, 3]", "fc1.bias [4]", "fc2.weight [2, 4]"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << " missing from:\n" << text;
  }
  const std::string dot = graph_to_dot(loss);
  EXPECT_EQ(dot.rfind("digraph backward {", 0), 0u);
  // 8 nodes (NllLoss, LogSoftmax, Linear, Relu, Linear, 3 leaves), 7 edges.
  size_t edges = 0;
  for (size_t p = dot.find("->"); p != std::string::npos; p = dot.find("->", p + 2)) ++edges;
  EXPECT_EQ(edges, 7u);
}

}  // namespace
}  // namespace course
