// variable.cpp: lesson 06, the Variable handle and grad mode (given; see variable.h).
#include "variable.h"

#include "engine.h"
#include "error.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {
namespace {
thread_local bool t_grad_mode = true;
}  // namespace

bool grad_mode_enabled() {
  return t_grad_mode;
}

NoGradGuard::NoGradGuard() : previous_(t_grad_mode) {
  t_grad_mode = false;
}
NoGradGuard::~NoGradGuard() {
  t_grad_mode = previous_;
}

EnableGradGuard::EnableGradGuard() : previous_(t_grad_mode) {
  t_grad_mode = true;
}
EnableGradGuard::~EnableGradGuard() {
  t_grad_mode = previous_;
}

Variable::Variable(Tensor data, bool requires_grad) : impl_(std::make_shared<VariableImpl>()) {
  if (!data.defined()) throw ConfigError("Variable: the data tensor is undefined");
  impl_->data = std::move(data);
  impl_->requires_grad = requires_grad;
}

VariableImpl& Variable::state() const {
  if (!impl_) throw ConfigError("use of an undefined Variable");
  return *impl_;
}

const Tensor& Variable::data() const {
  return state().data;
}

void Variable::set_data(const Tensor& data) const {
  VariableImpl& s = state();
  if (data.shape() != s.data.shape()) {
    throw ConfigError("set_data on \"" + s.name + "\": shape " + shape_str(data.shape()) +
                      " differs from " + shape_str(s.data.shape()));
  }
  s.data = data;
}

bool Variable::requires_grad() const {
  return state().requires_grad;
}

const Variable& Variable::set_requires_grad(bool requires_grad) const {
  VariableImpl& s = state();
  if (s.grad_fn) {
    throw ConfigError("set_requires_grad on a result of an op (" + s.name +
                      "): only leaves can change it; use detach() for a new leaf");
  }
  s.requires_grad = requires_grad;
  return *this;
}

bool Variable::is_leaf() const {
  return state().grad_fn == nullptr;
}

const std::shared_ptr<Node>& Variable::grad_fn() const {
  return state().grad_fn;
}

Tensor Variable::grad() const {
  VariableImpl& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.grad;
}

void Variable::set_grad(const Tensor& grad) const {
  VariableImpl& s = state();
  if (grad.defined() && grad.shape() != s.data.shape()) {
    throw ConfigError("set_grad on \"" + s.name + "\": gradient shape " + shape_str(grad.shape()) +
                      " differs from the data's " + shape_str(s.data.shape()));
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.grad = grad;
}

void Variable::zero_grad(bool set_to_none) const {
  VariableImpl& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (set_to_none) {
    s.grad = Tensor();
  } else if (s.grad.defined()) {
    fill_(s.grad, 0.0f);
  }
}

void Variable::backward(const Tensor& grad_output) const {
  run_backward(*this, grad_output);
}

Variable Variable::detach() const {
  Variable v(data());
  v.set_name(name());
  return v;
}

int Variable::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const {
  VariableImpl& s = state();
  if (s.grad_fn || !s.requires_grad) {
    throw ConfigError("register_post_accumulate_grad_hook on \"" + s.name +
                      "\": only leaves that require grad accumulate gradients");
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  const int id = s.next_hook_id++;
  s.hooks.emplace_back(id, std::move(hook));
  return id;
}

void Variable::remove_hook(int id) const {
  VariableImpl& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::erase_if(s.hooks, [id](const auto& entry) { return entry.first == id; });
}

const std::string& Variable::name() const {
  return state().name;
}

const Variable& Variable::set_name(std::string name) const {
  state().name = std::move(name);
  return *this;
}

}  // namespace course
