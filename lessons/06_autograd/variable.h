// variable.h: lesson 06, a tensor that remembers how it was made.
//
//   Variable w(Tensor::from_vector({2}, {0.5f, -1.0f}), /*requires_grad=*/true);   // a leaf
//   Variable x(Tensor::from_vector({2}, {3.0f, 4.0f}));                 // data, no gradient
//   Variable loss = sum(w * x);            // ops.h records MulBackward and SumBackward
//   loss.backward();                       // engine.h: dloss/dw lands in w.grad()
//   w.grad()                               // {3, 4}
//
// A Variable is a Tensor (its data()) plus what autograd needs:
//   requires_grad  whether gradients should flow to it;
//   grad_fn        for a result of an op: the Node (node.h) that turns the gradient of this
//                  result into gradients of the op's inputs; null for a leaf;
//   grad           for a leaf that requires grad: the accumulated gradient, undefined
//                  until the first backward() reaches it and after zero_grad();
//   hooks          for a leaf: functions called each time a gradient has been accumulated
//                  into grad (torch's register_post_accumulate_grad_hook; DDP's reducer
//                  hangs its all-reduce on them in lesson 10).
//
// PyTorch calls both halves "Tensor" since version 0.4; here the numbers (Tensor, in
// common/) and the graph (Variable) are separate types, so you always see which is which.
//
// Like Tensor, a Variable is a handle: copies share everything (data, grad, grad_fn).
//
// Grad mode: while a NoGradGuard lives on a thread, ops on that thread record nothing
// (evaluation, optimizer updates). The flag is thread_local, so replicas running in
// threads (lesson 08) do not disturb each other.
//
// Thread safety: a leaf may be used by graphs on several threads; its gradient, its
// gradient accumulator and its hooks are guarded by a mutex. One graph (one forward and
// its backward) belongs to one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace course {

class Node;
class Variable;

/// Called after a gradient has been accumulated into the leaf's grad().
using PostAccumulateGradHook = std::function<void(const Variable& leaf)>;

/// The shared state behind Variable handles. Use Variable's methods, not these fields.
struct VariableImpl {
  Tensor data;
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  std::string name;               // for error messages and graph pictures

  std::mutex mutex;  // guards the fields below
  Tensor grad;
  std::weak_ptr<Node> grad_accumulator;  // a leaf's AccumulateGrad, while a graph uses it
  std::vector<std::pair<int, PostAccumulateGradHook>> hooks;
  int next_hook_id = 0;
};

class Variable {
 public:
  /// An undefined Variable (defined() is false).
  Variable() = default;
  /// A leaf holding `data`.
  explicit Variable(Tensor data, bool requires_grad = false);
  /// A handle on existing state (AccumulateGrad hands its leaf to hooks this way).
  explicit Variable(std::shared_ptr<VariableImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  /// The numbers. Writing them in place bypasses autograd (what optimizers do).
  const Tensor& data() const;
  /// Replaces the numbers (loading a checkpoint). REQUIRES: same shape as before.
  void set_data(const Tensor& data) const;
  const Shape& shape() const { return data().shape(); }
  int64_t dim() const { return data().dim(); }
  int64_t size(int64_t d) const { return data().size(d); }
  int64_t numel() const { return data().numel(); }
  Device device() const { return data().device(); }
  /// The only element. REQUIRES: numel() == 1.
  float item() const { return data().item(); }

  bool requires_grad() const;
  /// Only leaves may change it (a result's requires_grad follows from its inputs).
  /// Returns *this so that `Variable w = Variable(t).set_requires_grad(true);` reads well.
  const Variable& set_requires_grad(bool requires_grad) const;
  /// True for variables made by the user rather than by an op.
  bool is_leaf() const;
  const std::shared_ptr<Node>& grad_fn() const;

  /// The accumulated gradient (undefined before the first backward and after zero_grad).
  Tensor grad() const;
  /// Replaces the gradient (DDP writes averaged gradients back this way).
  void set_grad(const Tensor& grad) const;
  /// set_to_none: drop the gradient (PyTorch's default since 2.0, and cheaper);
  /// otherwise fill it with zeros in place.
  void zero_grad(bool set_to_none = true) const;

  /// Backpropagates from this variable (engine.h). With no argument, this must hold one
  /// element and the seed gradient is 1; otherwise `grad_output` has this shape.
  void backward(const Tensor& grad_output = Tensor()) const;

  /// The same numbers, cut from the graph: a leaf that does not require grad.
  Variable detach() const;

  /// Registers `hook`, called after each accumulation into this leaf's grad(), i.e.
  /// once per backward() that reaches the leaf. Returns an id for remove_hook().
  /// REQUIRES: is_leaf() and requires_grad() (ConfigError otherwise).
  int register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const;
  void remove_hook(int id) const;

  const std::string& name() const;
  const Variable& set_name(std::string name) const;

  /// The shared state; two handles are the same variable iff their impl() match.
  const std::shared_ptr<VariableImpl>& impl() const { return impl_; }

 private:
  VariableImpl& state() const;
  std::shared_ptr<VariableImpl> impl_;
};

/// Whether ops on this thread record the graph (true unless a NoGradGuard lives).
bool grad_mode_enabled();

/// Turns recording off on this thread for its lifetime (torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Turns recording on on this thread for its lifetime, whatever the caller chose
/// (torch.enable_grad(): lesson 18's recomputation records its forward again inside a
/// backward).
class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace course
