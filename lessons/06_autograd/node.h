// node.h: lesson 06, the nodes of the backward graph (PyTorch's grad_fn objects).
//
// Every op that takes a Variable requiring grad creates one Node, stores in it whatever
// its backward formula needs (saved tensors), and points it at the nodes of its inputs:
//
//     forward:   a ──┐                       backward graph (what grad_fn records):
//                    ├─ mul ─ c ─ sum ─ L      SumBackward ──> MulBackward ──> AccumulateGrad(a)
//     (leaf)  b ──┘                                                      └───> AccumulateGrad(b)
//
// A node's next_functions() are where the gradients of its inputs go, in the op's input
// order: the input's grad_fn if it was made by an op, its AccumulateGrad if it is a leaf
// that requires grad, and nullptr if it needs no gradient (then the op may skip that
// gradient entirely: needs_input_grad(i) is false).
//
// Sequence numbers: each Node takes the next number of its thread's counter when it is
// created, so a node created later in the forward pass has a larger number. The engine
// (engine.h) runs ready nodes largest number first, i.e. in reverse order of the forward
// pass, the order DDP relies on. AccumulateGrad nodes carry the largest number of all, so
// a leaf's gradient is accumulated, and its hooks fire, as soon as it is complete.
//
// What this is not: a graph that records itself. The ops in ops_*.cpp call record<>().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tensor.h"
#include "variable.h"

namespace course {

class Node {
 public:
  Node();
  /// Frees the graph behind this node without recursion: a chain of a million nodes
  /// would otherwise overflow the stack, one destructor frame per node.
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// The backward formula. Given dL/d(output) (the shape of the op's result), returns
  /// dL/d(input i) for every input i, in next_functions() order, each of that input's
  /// shape. An entry may be left undefined when !needs_input_grad(i).
  virtual std::vector<Tensor> apply(const Tensor& grad_output) = 0;
  /// "MulBackward", for error messages and graph pictures.
  virtual std::string name() const = 0;
  /// The tensors this node keeps alive for its backward formula (MulBackward's a and b,
  /// ExpBackward's result, attention's P or its log-sum-exp): the memory a graph holds
  /// between forward and backward. Default: none (an add or a reshape keeps no tensor).
  /// Lesson 17's saved-tensor ledger sums their bytes over a graph; a node that saves a
  /// tensor must return it here, or the ledger undercounts.
  virtual std::vector<Tensor> saved_tensors() const { return {}; }

  const std::vector<std::shared_ptr<Node>>& next_functions() const { return next_; }
  bool needs_input_grad(size_t i) const { return i < next_.size() && next_[i] != nullptr; }
  uint64_t sequence_nr() const { return sequence_nr_; }

 protected:
  /// For AccumulateGrad, which always runs first.
  explicit Node(uint64_t sequence_nr) : sequence_nr_(sequence_nr) {}

 private:
  friend void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                           std::initializer_list<Variable> inputs);
  friend void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                           const std::vector<Variable>& inputs);
  std::vector<std::shared_ptr<Node>> next_;
  uint64_t sequence_nr_;
};

/// The sink at a leaf: adds the gradient that reaches it into leaf.grad() and then runs
/// the leaf's post-accumulate-grad hooks. One per leaf for as long as a graph uses it, so
/// a leaf used twice in one forward pass still accumulates (and fires its hooks) once.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<VariableImpl> leaf);
  /// Checks grad's shape, adds it into the leaf's gradient (accumulate), then fires the
  /// leaf's post-accumulate-grad hooks outside its lock. Returns no gradients: a leaf has
  /// no inputs.
  std::vector<Tensor> apply(const Tensor& grad) override;
  std::string name() const override { return "AccumulateGrad"; }
  /// The leaf this node accumulates into (lesson 10 finds unused parameters with it).
  Variable variable() const { return Variable(leaf_); }

 private:
  /// The accumulation itself (accumulate_grad.cpp), with the leaf's mutex held.
  void accumulate(const Tensor& grad);

  std::shared_ptr<VariableImpl> leaf_;
};

/// The leaf's AccumulateGrad, created on first use. REQUIRES: leaf.is_leaf() and
/// leaf.requires_grad().
std::shared_ptr<Node> grad_accumulator(const Variable& leaf);

/// Where an input's gradient goes: its grad_fn, its AccumulateGrad, or nullptr when it
/// does not require grad.
std::shared_ptr<Node> gradient_edge(const Variable& input);

/// True when an op on `inputs` must record a node: grad mode is on and an input
/// requires grad.
bool should_record(std::initializer_list<Variable> inputs);

/// Makes `node` the grad_fn of `result` (which then requires grad), with one edge per
/// input in order.
void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                  std::initializer_list<Variable> inputs);

/// The same two for inputs counted at run time (lesson 18's checkpoint takes any number).
bool should_record(const std::vector<Variable>& inputs);
void connect_node(Variable& result, const std::shared_ptr<Node>& node,
                  const std::vector<Variable>& inputs);

/// What every op does after computing its result:
///
///   Variable out(mul(a.data(), b.data()));
///   if (auto node = record<MulBackward>(out, {a, b})) {
///     node->a = a.data();          // save what backward needs, only when recording
///     node->b = b.data();
///   }
///
/// Returns the new node, or nullptr when nothing is recorded.
template <typename N>
std::shared_ptr<N> record(Variable& result, std::initializer_list<Variable> inputs) {
  if (!should_record(inputs)) return nullptr;
  auto node = std::make_shared<N>();
  connect_node(result, node, inputs);
  return node;
}

}  // namespace course
