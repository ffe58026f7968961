// module_list.h: lesson 07, given: a module that only holds others (torch.nn.ModuleList),
// for models whose layers repeat (lesson 15's residual blocks).
//
//   auto blocks = register_module("blocks", std::make_shared<ModuleList>());
//   blocks->append(std::make_shared<Linear>(8, 8, rng));   // "blocks.0.weight", ...
//
// Children are named by position, "0", "1", ..., as in PyTorch, so a state dict's names
// are a torch model's with an nn.ModuleList in the same place. It has no forward: its
// owner calls the children (Sequential, sequential.h, chains them instead).
#pragma once

#include <memory>
#include <string>

#include "error.h"
#include "module.h"

namespace course {

/// A module that only holds others, named "0", "1", ... (torch.nn.ModuleList).
class ModuleList : public Module {
 public:
  /// Registers `module` as the next child, named by its position; returns it.
  template <typename M>
  std::shared_ptr<M> append(std::shared_ptr<M> module) {
    return register_module(std::to_string(size_++), std::move(module));
  }
  /// Throws ConfigError: a list holds layers, its owner calls them.
  Variable forward(const Variable& /*x*/) override {
    throw ConfigError("ModuleList holds layers; it has no forward of its own");
  }
  /// "ModuleList".
  std::string describe() const override { return "ModuleList"; }

 private:
  int size_ = 0;
};

}  // namespace course
