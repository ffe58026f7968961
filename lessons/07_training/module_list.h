// module_list.h: lesson 07, given: modules that only hold others, torch.nn.ModuleList (by
// position: lesson 15's residual blocks, lesson 17's transformer blocks) and
// torch.nn.ModuleDict (by name: lesson 17's "transformer" of wte, wpe, h and ln_f).
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

/// A module that only holds others, each under its own name (torch.nn.ModuleDict).
class ModuleDict : public Module {
 public:
  /// Registers `module` as the child `name`; returns it.
  template <typename M>
  std::shared_ptr<M> add(const std::string& name, std::shared_ptr<M> module) {
    return register_module(name, std::move(module));
  }
  /// Throws ConfigError: a dict holds layers, its owner calls them.
  Variable forward(const Variable& /*x*/) override {
    throw ConfigError("ModuleDict holds layers; it has no forward of its own");
  }
  /// "ModuleDict".
  std::string describe() const override { return "ModuleDict"; }
};

}  // namespace course
