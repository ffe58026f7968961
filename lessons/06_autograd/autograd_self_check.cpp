// autograd_self_check.cpp: lesson 06, given: the driver's checks (see the header).
#include "autograd_self_check.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <vector>

#include "gradcheck.h"
#include "graph_dot.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {
namespace {

using Vars = std::vector<Variable>;

// Index-dependent inputs: offset + amplitude * sin(1.3 i + phase).
Tensor wavy(const Shape& shape, float phase, float amplitude = 1.0f, float offset = 0.0f) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = offset + amplitude * static_cast<float>(std::sin(1.3 * i + phase));
  }
  return t;
}
Tensor targets(int64_t rows, int64_t classes) {
  Tensor t = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i) t.data()[i] = static_cast<float>((3 * i + 1) % classes);
  return t;
}

struct OpCheck {
  const char* name;
  std::function<Variable(const Vars&)> f;
  std::vector<Tensor> inputs;
};

bool near(const Tensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  if (!got.defined() || got.numel() != static_cast<int64_t>(want.size())) return false;
  const std::vector<float> g = got.to_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - want[i]) <= tol)) return false;
  }
  return true;
}

int report(const char* what, bool ok, const std::string& detail = "") {
  std::cout << "   " << std::left << std::setw(44) << what << (ok ? "ok" : "WRONG") << detail
            << "\n";
  return ok ? 0 : 1;
}

}  // namespace

int gradcheck_every_op() {
  const Tensor t = targets(5, 4);
  Tensor kinkless = wavy({4, 5}, 0.3f);
  for (float& v : kinkless.span()) v = (v >= 0 ? 1.0f : -1.0f) * (0.2f + 0.8f * std::fabs(v));
  const std::vector<OpCheck> checks = {
      {"add", [](const Vars& v) { return add(v[0], v[1]); }, {wavy({3, 4}, 0), wavy({3, 4}, 1)}},
      {"add (bias)",
       [](const Vars& v) { return add(v[0], v[1]); },
       {wavy({5, 3}, 0), wavy({3}, 2)}},
      {"sub", [](const Vars& v) { return sub(v[0], v[1]); }, {wavy({2, 5}, 0), wavy({2, 5}, 1)}},
      {"mul", [](const Vars& v) { return mul(v[0], v[1]); }, {wavy({4, 3}, 0), wavy({4, 3}, 1)}},
      {"div",
       [](const Vars& v) { return div(v[0], v[1]); },
       {wavy({3, 3}, 0), wavy({3, 3}, 1, 0.5f, 1.0f)}},
      {"neg", [](const Vars& v) { return neg(v[0]); }, {wavy({7}, 0)}},
      {"scale", [](const Vars& v) { return scale(v[0], -2.5f); }, {wavy({7}, 0)}},
      {"exp", [](const Vars& v) { return exp(v[0]); }, {wavy({2, 6}, 0)}},
      {"log", [](const Vars& v) { return log(v[0]); }, {wavy({2, 6}, 0, 0.5f, 1.0f)}},
      {"relu", [](const Vars& v) { return relu(v[0]); }, {kinkless}},
      {"matmul",
       [](const Vars& v) { return matmul(v[0], v[1]); },
       {wavy({3, 4}, 0), wavy({4, 5}, 1)}},
      {"linear",
       [](const Vars& v) { return linear(v[0], v[1], v[2]); },
       {wavy({4, 3}, 0), wavy({5, 3}, 1), wavy({5}, 2)}},
      {"transpose", [](const Vars& v) { return transpose(v[0]); }, {wavy({3, 5}, 0)}},
      {"reshape",
       [](const Vars& v) {
         return reshape(v[0], {5, -1});
       },
       {wavy({3, 5}, 0)}},
      {"sum", [](const Vars& v) { return sum(v[0]); }, {wavy({3, 4}, 0)}},
      {"mean", [](const Vars& v) { return mean(v[0]); }, {wavy({3, 4}, 0)}},
      {"log_softmax", [](const Vars& v) { return log_softmax(v[0]); }, {wavy({4, 6}, 0, 2.0f)}},
      {"nll_loss",
       [&](const Vars& v) { return nll_loss(log_softmax(v[0]), t); },
       {wavy({5, 4}, 0)}},
      {"cross_entropy", [&](const Vars& v) { return cross_entropy(v[0], t); }, {wavy({5, 4}, 1)}},
  };
  std::cout << "1. every op's backward against central differences (h = 1e-3)\n";
  int failed = 0;
  for (const OpCheck& c : checks) {
    const GradcheckResult r = gradcheck(c.f, c.inputs);
    std::cout << "   " << std::left << std::setw(14) << c.name << " max |error| " << std::scientific
              << std::setprecision(1) << r.max_abs_error << std::defaultfloat << "  "
              << (r.ok ? "ok" : "WRONG: " + r.detail) << "\n";
    failed += r.ok ? 0 : 1;
  }
  return failed;
}

int check_engine_cases() {
  std::cout << "2. the engine\n";
  int failed = 0;
  const Tensor x0 = wavy({4}, 0.5f);
  {  // a = 3x used twice: d sum(a*a + a)/dx = 18x + 3
    Variable x(x0, true);
    const Variable a = scale(x, 3.0f);
    sum(add(mul(a, a), a)).backward();
    std::vector<float> want;
    for (float v : x0.to_vector()) want.push_back(18 * v + 3);
    failed += report("diamond: a = 3x used twice", near(x.grad(), want));
  }
  {  // z = 2x feeds sum(z) and sum(z*z): d/dx = 2 + 8x, whether summed or backward twice
    std::vector<float> want;
    for (float v : x0.to_vector()) want.push_back(2 + 8 * v);
    Variable x(x0, true);
    const Variable z = scale(x, 2.0f);
    add(sum(z), sum(mul(z, z))).backward();
    Variable y(x0, true);
    const Variable w = scale(y, 2.0f);
    sum(w).backward();
    sum(mul(w, w)).backward();
    failed += report("one tensor, two losses", near(x.grad(), want) && near(y.grad(), want));
  }
  {  // backward twice doubles the gradient
    Variable x(x0, true);
    const Variable loss = sum(mul(x, x));
    loss.backward();
    loss.backward();
    std::vector<float> want;
    for (float v : x0.to_vector()) want.push_back(4 * v);
    failed += report("backward twice accumulates", near(x.grad(), want));
  }
  {  // hooks on a two-layer network
    Variable w1(wavy({5, 4}, 0, 0.5f), true), b1(wavy({5}, 1, 0.5f), true);
    Variable w2(wavy({3, 5}, 2, 0.5f), true), b2(wavy({3}, 3, 0.5f), true);
    std::vector<std::string> fired;
    for (auto [p, name] : {std::pair{&w1, "w1"}, {&b1, "b1"}, {&w2, "w2"}, {&b2, "b2"}}) {
      p->set_name(name);
      p->register_post_accumulate_grad_hook(
          [&fired](const Variable& leaf) { fired.push_back(leaf.name()); });
    }
    const Variable x(wavy({6, 4}, 4));
    for (int i = 0; i < 2; ++i) {
      cross_entropy(linear(relu(linear(x, w1, b1)), w2, b2), targets(6, 3)).backward();
    }
    std::string order;
    for (const auto& n : fired) order += " " + n;
    const std::vector<std::string> want{"b2", "w2", "b1", "w1", "b2", "w2", "b1", "w1"};
    failed +=
        report("hooks: once per parameter, reverse order", fired == want, " (fired:" + order + ")");
  }
  return failed;
}

void show_mlp_graph(const std::string& dot_path) {
  std::cout << "3. the backward graph of loss = cross_entropy(fc2(relu(fc1(x))), y)\n";
  Variable w1(wavy({16, 784}, 0, 0.05f), true), b1(wavy({16}, 1, 0.05f), true);
  Variable w2(wavy({10, 16}, 2, 0.05f), true), b2(wavy({10}, 3, 0.05f), true);
  w1.set_name("fc1.weight");
  b1.set_name("fc1.bias");
  w2.set_name("fc2.weight");
  b2.set_name("fc2.bias");
  const Variable x(wavy({8, 784}, 4));
  const Variable loss = cross_entropy(linear(relu(linear(x, w1, b1)), w2, b2), targets(8, 10));
  std::string text = graph_to_text(loss);
  for (size_t p = 0; p < text.size(); p = text.find('\n', p) + 1) text.insert(p, "   ");
  std::cout << text;
  if (!dot_path.empty()) {
    std::ofstream(dot_path) << graph_to_dot(loss);
    std::cout << "   wrote " << dot_path << " (render: dot -Tsvg " << dot_path << " > graph.svg)\n";
  }
}

}  // namespace course
