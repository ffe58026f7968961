// node.cpp: lesson 06, building the backward graph (given; see node.h).
#include "node.h"

#include <limits>

#include "error.h"

namespace course {
namespace {
// Per thread, like PyTorch's: graphs built on different threads never share a counter.
thread_local uint64_t t_next_sequence_nr = 0;
}  // namespace

Node::Node() : sequence_nr_(t_next_sequence_nr++) {}

AccumulateGrad::AccumulateGrad(std::shared_ptr<VariableImpl> leaf)
    : Node(std::numeric_limits<uint64_t>::max()), leaf_(std::move(leaf)) {}

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

bool should_record(std::initializer_list<Variable> inputs) {
  if (!grad_mode_enabled()) return false;
  for (const Variable& v : inputs) {
    if (v.defined() && v.requires_grad()) return true;
  }
  return false;
}

void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                  std::initializer_list<Variable> inputs) {
  node->next_.clear();
  for (const Variable& v : inputs) node->next_.push_back(gradient_edge(v));
  VariableImpl& r = *result.impl();
  r.grad_fn = node;
  r.requires_grad = true;
}

}  // namespace course
