// engine_test.cpp: lesson 06, the backward pass (engine.h) and accumulation (node.h):
// diamonds, shared results, accumulation across calls, zero_grad, no_grad, hooks and
// their order, threads, deep graphs.
//
//   ctest -L lesson06 -R Engine     or     ./build/solutions/test_06 --gtest_filter='Engine*'
#include <gtest/gtest.h>

#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "inputs.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {
namespace {

using test::class_targets;
using test::wavy;

std::vector<float> values(const Tensor& t) {
  return t.to_vector();
}

void expect_values_near(const Tensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_TRUE(got.defined());
  const std::vector<float> g = got.to_vector();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << "element " << i;
}

// a = 3x is used twice: L = sum(a * a + a) = sum(9x² + 3x), dL/dx = 18x + 3.
TEST(Engine, DiamondSumsBothPaths) {
  Variable x(wavy({5}), true);
  const Variable a = scale(x, 3.0f);
  sum(add(mul(a, a), a)).backward();
  std::vector<float> want;
  for (float v : values(x.data())) want.push_back(18.0f * v + 3.0f);
  expect_values_near(x.grad(), want);
}

// z feeds two losses. Backward of each accumulates both contributions into x.grad; a
// backward of their sum delivers two gradients to z's node, which must be added (an
// engine that assigns the second over the first gets half the answer).
TEST(Engine, TensorFeedingTwoLossesGetsBothGradients) {
  const Tensor x0 = wavy({4});
  std::vector<float> want;  // z = 2x: d(sum z + sum z²)/dx = 2 + 8x
  for (float v : values(x0)) want.push_back(2.0f + 8.0f * v);

  Variable x(x0, true);
  Variable z = scale(x, 2.0f);
  Variable l1 = sum(z), l2 = sum(mul(z, z));
  l1.backward();
  l2.backward();
  expect_values_near(x.grad(), want);

  Variable y(x0, true);
  Variable w = scale(y, 2.0f);
  add(sum(w), sum(mul(w, w))).backward();
  expect_values_near(y.grad(), want);
}

TEST(Engine, BackwardTwiceAccumulatesUntilZeroed) {
  Variable w(wavy({3, 2}), true);
  Variable x(wavy({4, 2}, 1.0f));
  const Variable loss = sum(linear(x, w, Variable()));
  loss.backward();
  const std::vector<float> once = values(w.grad());
  loss.backward();
  std::vector<float> twice;
  for (float v : once) twice.push_back(2 * v);
  expect_values_near(w.grad(), twice);

  w.zero_grad();  // set_to_none
  EXPECT_FALSE(w.grad().defined());
  loss.backward();
  expect_values_near(w.grad(), once);

  w.zero_grad(/*set_to_none=*/false);
  expect_values_near(w.grad(), std::vector<float>(6, 0.0f), 0.0f);
  loss.backward();
  expect_values_near(w.grad(), once);
}

// AddBackward hands one tensor to both inputs. If both leaves kept that tensor as their
// gradient, the next backward's in-place accumulation into one would change the other.
TEST(Engine, LeavesNeverShareGradientStorage) {
  Variable x(wavy({3}), true), y(wavy({3}, 1.0f), true);
  sum(add(x, y)).backward();
  EXPECT_FALSE(x.grad().shares_storage_with(y.grad()));
  sum(scale(x, 2.0f)).backward();
  expect_values_near(x.grad(), {3, 3, 3});
  expect_values_near(y.grad(), {1, 1, 1});
}

TEST(Engine, LeafUsedTwiceAccumulatesOnce) {
  Variable w(wavy({2, 2}), true);
  Variable x(wavy({3, 2}, 1.0f));
  int calls = 0;
  w.register_post_accumulate_grad_hook([&](const Variable&) { ++calls; });
  // y = (x wᵀ) wᵀ uses w twice.
  sum(linear(linear(x, w, Variable()), w, Variable())).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(w.grad().defined());
}

struct TwoLayerNet {
  Variable w1{wavy({5, 4}, 0.0f, 0.5f), true};
  Variable b1{wavy({5}, 1.0f, 0.5f), true};
  Variable w2{wavy({3, 5}, 2.0f, 0.5f), true};
  Variable b2{wavy({3}, 3.0f, 0.5f), true};
  TwoLayerNet() {
    w1.set_name("w1");
    b1.set_name("b1");
    w2.set_name("w2");
    b2.set_name("b2");
  }
  Variable loss_linear(const Variable& x, const Tensor& t) const {
    return cross_entropy(linear(relu(linear(x, w1, b1)), w2, b2), t);
  }
  Variable loss_matmul(const Variable& x, const Tensor& t) const {
    const Variable h = relu(add(matmul(x, transpose(w1)), b1));
    return cross_entropy(add(matmul(h, transpose(w2)), b2), t);
  }
};

// DDP (lesson 10) fills its buckets in the order gradients become ready: the reverse of
// the order in which parameters were used, each exactly once per backward.
TEST(Engine, HooksFireOncePerParameterPerBackwardInReverseOrderOfUse) {
  TwoLayerNet net;
  std::vector<std::string> fired;
  for (const Variable* p : {&net.w1, &net.b1, &net.w2, &net.b2}) {
    p->register_post_accumulate_grad_hook([&](const Variable& leaf) {
      EXPECT_TRUE(leaf.grad().defined()) << "hook of " << leaf.name() << " ran before accumulation";
      fired.push_back(leaf.name());
    });
  }
  const Variable x(wavy({6, 4}, 4.0f));
  const Tensor t = class_targets(6, 3);
  const std::vector<std::string> want{"b2", "w2", "b1", "w1"};

  net.loss_linear(x, t).backward();
  EXPECT_EQ(fired, want);
  fired.clear();
  net.loss_linear(x, t).backward();
  EXPECT_EQ(fired, want);
  fired.clear();
  net.loss_matmul(x, t).backward();
  EXPECT_EQ(fired, want);
}

// The order is the reverse of creation (sequence numbers), not of argument positions: v is
// made after u, so p2's gradient is ready first although add() takes v first.
TEST(Engine, HooksFollowReverseCreationOrderNotArgumentOrder) {
  Variable p1(wavy({4}), true), p2(wavy({4}, 1.0f), true);
  p1.set_name("p1");
  p2.set_name("p2");
  std::vector<std::string> fired;
  for (const Variable* p : {&p1, &p2}) {
    p->register_post_accumulate_grad_hook(
        [&](const Variable& leaf) { fired.push_back(leaf.name()); });
  }
  const Variable u = scale(p1, 2.0f);
  const Variable v = scale(p2, 3.0f);
  sum(add(v, u)).backward();
  EXPECT_EQ(fired, (std::vector<std::string>{"p2", "p1"}));
  fired.clear();
  sum(add(u, v)).backward();
  EXPECT_EQ(fired, (std::vector<std::string>{"p2", "p1"}));
}

TEST(Engine, HookSeesTheAccumulatedGradientAndCanBeRemoved) {
  Variable w(wavy({3}), true);
  std::vector<float> seen;
  const int id = w.register_post_accumulate_grad_hook(
      [&](const Variable& leaf) { seen.push_back(leaf.grad().data()[0]); });
  const Variable loss = sum(scale(w, 2.0f));
  loss.backward();
  loss.backward();
  EXPECT_EQ(seen, (std::vector<float>{2.0f, 4.0f}));
  w.remove_hook(id);
  loss.backward();
  EXPECT_EQ(seen.size(), 2u);
}

TEST(Engine, HooksOnlyOnLeavesThatRequireGrad) {
  Variable x(wavy({2}));
  EXPECT_THROW(x.register_post_accumulate_grad_hook([](const Variable&) {}), ConfigError);
  Variable w(wavy({2}), true);
  EXPECT_THROW(scale(w, 2.0f).register_post_accumulate_grad_hook([](const Variable&) {}),
               ConfigError);
}

TEST(Engine, NoGradGuardRecordsNothingAndRestores) {
  Variable w(wavy({3}), true);
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(grad_mode_enabled());
    const Variable y = scale(w, 2.0f);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    EXPECT_THROW(sum(y).backward(), ConfigError);
    { NoGradGuard nested; }
    EXPECT_FALSE(grad_mode_enabled());
  }
  EXPECT_TRUE(grad_mode_enabled());
  EXPECT_TRUE(scale(w, 2.0f).requires_grad());
}

TEST(Engine, GradModeIsPerThread) {
  NoGradGuard no_grad;
  bool other_thread_enabled = false;  // grad_mode_enabled() cannot throw
  std::thread([&] { other_thread_enabled = grad_mode_enabled(); }).join();
  EXPECT_TRUE(other_thread_enabled);
  EXPECT_FALSE(grad_mode_enabled());
}

TEST(Engine, NonScalarRootNeedsAGradOutput) {
  Variable x(wavy({2, 3}), true);
  const Variable y = scale(x, 3.0f);
  EXPECT_THROW(y.backward(), ConfigError);
  EXPECT_THROW(y.backward(wavy({3, 2})), ConfigError);
  const Tensor g = wavy({2, 3}, 1.0f);
  y.backward(g);
  std::vector<float> want;
  for (float v : values(g)) want.push_back(3 * v);
  expect_values_near(x.grad(), want);
}

TEST(Engine, BackwardFromALeaf) {
  Variable x(Tensor::scalar(2.0f), true);
  x.backward();
  expect_values_near(x.grad(), {1.0f});
}

TEST(Engine, SetRequiresGradOnlyOnLeaves) {
  Variable x(wavy({2}), true);
  EXPECT_THROW(scale(x, 2.0f).set_requires_grad(false), ConfigError);
  const Variable d = scale(x, 2.0f).detach();
  EXPECT_TRUE(d.is_leaf());
  EXPECT_FALSE(d.requires_grad());
}

// Lesson 08 runs one replica per thread: graphs on different threads must not interfere.
TEST(Engine, ThreadsBuildAndRunIndependentGraphs) {
  constexpr int kThreads = 4;
  std::vector<std::vector<float>> grads(kThreads);
  std::vector<std::exception_ptr> errors(kThreads);
  std::vector<std::thread> threads;
  for (int r = 0; r < kThreads; ++r) {
    threads.emplace_back([r, &grads, &errors] {
      try {
        Variable w(wavy({8, 6}, static_cast<float>(r)), true);
        const Variable x(wavy({16, 6}, 10.0f + r));
        for (int step = 0; step < 50; ++step) {
          w.zero_grad();
          cross_entropy(linear(x, w, Variable()), class_targets(16, 8)).backward();
        }
        grads[r] = w.grad().to_vector();
      } catch (...) {
        errors[r] = std::current_exception();  // rethrown below, on the test's thread
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (int r = 0; r < kThreads; ++r) {
    Variable w(wavy({8, 6}, static_cast<float>(r)), true);
    const Variable x(wavy({16, 6}, 10.0f + r));
    cross_entropy(linear(x, w, Variable()), class_targets(16, 8)).backward();
    EXPECT_EQ(grads[r], w.grad().to_vector()) << "thread " << r;
  }
}

// Both backward and freeing the graph: a recursive ~Node overflows the stack long before
// a million nodes (at 200,000 in the release build, at 20,000 under AddressSanitizer).
TEST(Engine, DeepChainDoesNotOverflowTheStack) {
  Variable x(Tensor::scalar(1.0f), true);
  Variable y = x;
  for (int i = 0; i < 1000000; ++i) y = scale(y, i % 2 == 0 ? 2.0f : 0.5f);
  y.backward();
  expect_values_near(x.grad(), {1.0f});
}

TEST(Engine, DeepChainIsFreedWithoutBackward) {
  Variable x(Tensor::scalar(3.0f), true);
  {
    Variable y = x;
    for (int i = 0; i < 1000000; ++i) y = scale(y, 1.0f);
    EXPECT_TRUE(y.grad_fn() != nullptr);
  }  // the whole chain dies here, from its far end
  EXPECT_FALSE(x.grad().defined());
}

}  // namespace
}  // namespace course
