// sequential.h: lesson 07, chaining layers (torch.nn.Sequential and nn.ReLU), and the MLP
// the lesson trains (given).
//
//   Rng rng(0);
//   std::shared_ptr<Sequential> mlp = make_mlp({784, 512, 512, 10}, rng);
//   // Sequential(0: Linear(784, 512), 1: ReLU, 2: Linear(512, 512), 3: ReLU, 4: Linear(512, 10))
//   Variable logits = mlp->forward(x);
//
// Children are named by position, "0", "1", ..., as in PyTorch, so the parameters are
// "0.weight", "0.bias", "2.weight", ... in that order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "module.h"
#include "rng.h"

namespace course {

/// max(x, 0), elementwise. No parameters.
class ReLU : public Module {
 public:
  Variable forward(const Variable& x) override;
  std::string describe() const override { return "ReLU()"; }
};

/// Applies its children in order.
class Sequential : public Module {
 public:
  /// Appends `layer`, named by its position.
  void push_back(std::shared_ptr<Module> layer);
  Variable forward(const Variable& x) override;
  /// One child per line, indented.
  std::string describe() const override;
  size_t size() const { return layers_.size(); }
  /// Layer i, in the order they were appended (lesson 13 groups them into FSDP units).
  const std::shared_ptr<Module>& layer(size_t i) const { return layers_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

/// Linear(sizes[0], sizes[1]), ReLU, ..., Linear(sizes[n-2], sizes[n-1]): no ReLU after
/// the last layer (it produces logits). Parameters are named with their full dotted
/// names ("2.weight") for graphs and errors. REQUIRES: at least two sizes.
std::shared_ptr<Sequential> make_mlp(const std::vector<int64_t>& sizes, Rng& rng);

}  // namespace course
