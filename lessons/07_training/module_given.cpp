// module_given.cpp: lesson 07, given: everything of the Module base but named_parameters()
// (the exercise, module.cpp): registration, buffers, state_dict and load_state_dict.
#include <map>

#include "error.h"
#include "module.h"
#include "tensor_ops.h"

namespace course {

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& entry : named_parameters()) out.push_back(std::move(entry.second));
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out = buffers_;
  for (const auto& [child_name, child] : children_) {
    for (auto& [name, t] : child->named_buffers()) out.emplace_back(child_name + "." + name, t);
  }
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const Variable& p : parameters()) n += p.numel();
  return n;
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  for (const auto& [name, p] : named_parameters()) out.emplace_back(name, p.data());
  for (auto& entry : named_buffers()) out.push_back(std::move(entry));
  return out;
}

void Module::load_state_dict(const NamedTensors& state, const std::string& ignore_prefix) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : state) given[name] = &t;
  const NamedTensors mine = state_dict();
  std::string problems;
  for (const auto& [name, t] : mine) {
    const auto it = given.find(name);
    if (it == given.end()) {
      problems += " missing \"" + name + "\";";
    } else if (it->second->shape() != t.shape()) {
      problems += " \"" + name + "\" is " + shape_str(it->second->shape()) + ", the model's is " +
                  shape_str(t.shape()) + ";";
    }
    if (it != given.end()) given.erase(it);
  }
  for (const auto& [name, t] : given) {
    if (ignore_prefix.empty() || name.rfind(ignore_prefix, 0) != 0) {
      problems += " unexpected \"" + name + "\";";
    }
  }
  if (!problems.empty()) {
    throw ConfigError("load_state_dict:" + problems +
                      " was the checkpoint saved from a model of another shape?");
  }
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, t] : state) by_name[name] = &t;
  for (const auto& [name, t] : mine) copy_(t, *by_name.at(name));
}

void Module::zero_grad(bool set_to_none) {
  for (const Variable& p : parameters()) p.zero_grad(set_to_none);
}

void Module::check_new_name(const std::string& name) const {
  bool taken = false;
  for (const auto& entry : parameters_) taken |= entry.first == name;
  for (const auto& entry : buffers_) taken |= entry.first == name;
  for (const auto& entry : children_) taken |= entry.first == name;
  if (name.empty() || name.find('.') != std::string::npos || taken) {
    throw ConfigError("register \"" + name + "\" in " + describe() +
                      ": names must be non-empty, new in the module, and without '.'");
  }
}

Variable Module::register_parameter(const std::string& name, Tensor data) {
  check_new_name(name);
  Variable p(std::move(data), /*requires_grad=*/true);
  p.set_name(name);
  parameters_.emplace_back(name, p);
  return p;
}

void Module::register_buffer(const std::string& name, Tensor data) {
  check_new_name(name);
  buffers_.emplace_back(name, std::move(data));
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  if (!module) throw ConfigError("register_module \"" + name + "\": null module");
  children_.emplace_back(name, std::move(module));
}

}  // namespace course
