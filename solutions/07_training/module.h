// module.h: lesson 07, the base of every layer and model (torch.nn.Module).
//
//   class Mlp : public Module {
//    public:
//     Mlp(Rng& rng) {
//       fc1_ = register_module("fc1", std::make_shared<Linear>(784, 512, rng));
//       fc2_ = register_module("fc2", std::make_shared<Linear>(512, 10, rng));
//     }
//     Variable forward(const Variable& x) override { return fc2_->forward(relu(fc1_->forward(x)));
//     }
//    private:
//     std::shared_ptr<Linear> fc1_, fc2_;
//   };
//
// A Module owns parameters (leaf Variables that require grad) and child modules, each
// under a name. named_parameters() lists them in a fixed order, which everything after
// this lesson depends on:
//
//   INVARIANT (registration order): a module's own parameters in the order they were
//   registered, then each child's named_parameters() in the order the children were
//   registered, prefixed "child." (torch's order). Two replicas built by the same code
//   list their parameters identically, so DataParallel (lesson 08) can copy parameter i
//   onto parameter i, and DDP (lessons 09-10) can all-reduce gradient i with gradient i of
//   every other rank, and build its buckets in reverse of this order.
//
// Buffers are tensors that belong to the model's state but get no gradient (BatchNorm's
// running mean, lesson 11); they are saved in checkpoints with the parameters.
//
// Thread safety: a Module is not synchronised. Forward passes on several threads are fine
// (they only read parameters); changing the structure is not.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "safetensors.h"
#include "tensor.h"
#include "variable.h"

namespace course {

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual Variable forward(const Variable& x) = 0;
  /// "Linear(in_features=784, out_features=512)"; containers list their children.
  virtual std::string describe() const = 0;

  /// Every parameter of this module and its descendants, named "child.grandchild.name",
  /// in registration order (see the invariant above).
  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  /// named_parameters() without the names.
  std::vector<Variable> parameters() const;
  /// Buffers, named and ordered like parameters.
  NamedTensors named_buffers() const;
  /// The total number of parameter elements.
  int64_t parameter_count() const;

  /// Parameters' data, then buffers, by name (shares storage: clone to keep a copy).
  NamedTensors state_dict() const;
  /// Copies every tensor of `state` into the parameter or buffer of the same name.
  /// Throws ConfigError listing missing, unexpected or mis-shaped names; nothing is
  /// changed then. Extra entries starting with `ignore_prefix` (e.g. "optimizer.") are
  /// allowed when it is non-empty.
  void load_state_dict(const NamedTensors& state, const std::string& ignore_prefix = "");

  /// Clears every parameter's gradient (set_to_none: drop it; else fill with zeros).
  void zero_grad(bool set_to_none = true);

 protected:
  /// Adds a parameter named `name` holding `data` (requires grad; named for graphs and
  /// errors). REQUIRES: `name` is new in this module and contains no '.'.
  Variable register_parameter(const std::string& name, Tensor data);
  void register_buffer(const std::string& name, Tensor data);
  /// Adds a child module; returns it, for the caller to keep a typed handle.
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

 private:
  void check_new_name(const std::string& name) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);

  std::vector<std::pair<std::string, Variable>> parameters_;
  NamedTensors buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

}  // namespace course
