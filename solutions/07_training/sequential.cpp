// sequential.cpp: lesson 07, Sequential, ReLU and make_mlp (given; see sequential.h).
#include "sequential.h"

#include "error.h"
#include "linear.h"
#include "ops.h"

namespace course {

Variable ReLU::forward(const Variable& x) {
  return relu(x);
}

void Sequential::push_back(std::shared_ptr<Module> layer) {
  layers_.push_back(register_module(std::to_string(layers_.size()), std::move(layer)));
}

Variable Sequential::forward(const Variable& x) {
  Variable h = x;
  for (const auto& layer : layers_) h = layer->forward(h);
  return h;
}

std::string Sequential::describe() const {
  std::string s = "Sequential(\n";
  for (size_t i = 0; i < layers_.size(); ++i) {
    s += "  (" + std::to_string(i) + "): " + layers_[i]->describe() + "\n";
  }
  return s + ")";
}

std::shared_ptr<Sequential> make_mlp(const std::vector<int64_t>& sizes, Rng& rng) {
  if (sizes.size() < 2) throw ConfigError("make_mlp: needs at least an input and an output size");
  auto mlp = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    mlp->push_back(std::make_shared<Linear>(sizes[i], sizes[i + 1], rng));
    if (i + 2 < sizes.size()) mlp->push_back(std::make_shared<ReLU>());
  }
  for (const auto& [name, p] : mlp->named_parameters()) p.set_name(name);
  return mlp;
}

}  // namespace course
