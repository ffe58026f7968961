// node.cpp: lesson 06, building the backward graph (given; see node.h).
#include "node.h"

#include <limits>
#include <mutex>
#include <vector>

#include "error.h"

namespace course {
namespace {
// Per thread, like PyTorch's: graphs built on different threads never share a counter.
thread_local uint64_t t_next_sequence_nr = 0;
}  // namespace

Node::Node() : sequence_nr_(t_next_sequence_nr++) {}

// Releasing next_ the ordinary way would run the next node's destructor from inside this
// one, and so on down the chain: recursion as deep as the graph. Instead, every node this
// one owns alone (use_count 1: nobody else can reach it) hands its own edges to a local
// stack before it dies, so each node is destroyed with no edges left and the depth of the
// graph never becomes the depth of the call stack. Nodes still shared elsewhere (another
// graph, a Variable's grad_fn) are only released, as before.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> stack = std::move(next_);
  while (!stack.empty()) {
    std::shared_ptr<Node> node = std::move(stack.back());
    stack.pop_back();
    if (node && node.use_count() == 1) {
      for (std::shared_ptr<Node>& next : node->next_) stack.push_back(std::move(next));
      node->next_.clear();
    }
  }
}

AccumulateGrad::AccumulateGrad(std::shared_ptr<VariableImpl> leaf)
    : Node(std::numeric_limits<uint64_t>::max()), leaf_(std::move(leaf)) {}

std::vector<Tensor> AccumulateGrad::apply(const Tensor& grad) {
  if (!grad.defined()) return {};
  if (grad.shape() != leaf_->data.shape()) {
    throw ConfigError("AccumulateGrad: gradient of shape " + shape_str(grad.shape()) + " for \"" +
                      leaf_->name + "\" of shape " + shape_str(leaf_->data.shape()) +
                      ": a backward formula returned the wrong shape");
  }
  std::vector<PostAccumulateGradHook> hooks;
  {
    std::lock_guard<std::mutex> lock(leaf_->mutex);
    accumulate(grad);
    for (const auto& entry : leaf_->hooks) hooks.push_back(entry.second);
  }
  // Outside the lock: a hook may read or replace the gradient (DDP's reducer does).
  const Variable leaf(leaf_);
  for (const auto& hook : hooks) hook(leaf);
  return {};
}

std::shared_ptr<Node> grad_accumulator(const Variable& leaf) {
  if (!leaf.is_leaf() || !leaf.requires_grad()) {
    throw ConfigError("grad_accumulator: \"" + leaf.name() + "\" is not a leaf requiring grad");
  }
  VariableImpl& s = *leaf.impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::shared_ptr<Node> node = s.grad_accumulator.lock();
  if (!node) {
    node = std::make_shared<AccumulateGrad>(leaf.impl());
    s.grad_accumulator = node;
  }
  return node;
}

std::shared_ptr<Node> gradient_edge(const Variable& input) {
  if (!input.defined() || !input.requires_grad()) return nullptr;
  if (input.grad_fn()) return input.grad_fn();
  return grad_accumulator(input);
}

namespace {

template <typename Inputs>
bool any_requires_grad(const Inputs& inputs) {
  if (!grad_mode_enabled()) return false;
  for (const Variable& v : inputs) {
    if (v.defined() && v.requires_grad()) return true;
  }
  return false;
}

template <typename Inputs>
std::vector<std::shared_ptr<Node>> edges_of(const Inputs& inputs) {
  std::vector<std::shared_ptr<Node>> edges;
  for (const Variable& v : inputs) edges.push_back(gradient_edge(v));
  return edges;
}

}  // namespace

bool should_record(std::initializer_list<Variable> inputs) {
  return any_requires_grad(inputs);
}

bool should_record(const std::vector<Variable>& inputs) {
  return any_requires_grad(inputs);
}

void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                  std::initializer_list<Variable> inputs) {
  node->next_ = edges_of(inputs);
  VariableImpl& r = *result.impl();
  r.grad_fn = node;
  r.requires_grad = true;
}

void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                  const std::vector<Variable>& inputs) {
  node->next_ = edges_of(inputs);
  VariableImpl& r = *result.impl();
  r.grad_fn = node;
  r.requires_grad = true;
}

}  // namespace course
