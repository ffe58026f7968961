// bn_mlp.cpp: lesson 11, LayerStack and the BatchNorm MLP (given; see bn_mlp.h).
#include "bn_mlp.h"

#include "batch_norm.h"
#include "error.h"
#include "linear.h"
#include "sequential.h"

namespace course {

void LayerStack::push_back(std::shared_ptr<Module> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

Variable LayerStack::forward(const Variable& x) {
  Variable h = x;
  for (const auto& layer : layers_) h = layer->forward(h);
  return h;
}

std::string LayerStack::describe() const {
  std::string s = "LayerStack(\n";
  for (size_t i = 0; i < layers_.size(); ++i) {
    s += "  (" + std::to_string(i) + "): " + layers_[i]->describe() + "\n";
  }
  return s + ")";
}

void LayerStack::set_training(bool training) {
  for (const auto& layer : layers_) {
    if (auto* bn = dynamic_cast<BatchNorm1d*>(layer.get())) bn->set_training(training);
  }
}

std::shared_ptr<LayerStack> make_bn_mlp(const std::vector<int64_t>& sizes, Rng& rng) {
  if (sizes.size() < 2) throw ConfigError("make_bn_mlp: needs at least two sizes");
  auto model = std::make_shared<LayerStack>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    model->push_back(std::make_shared<Linear>(sizes[i], sizes[i + 1], rng));
    if (i + 2 < sizes.size()) {
      model->push_back(std::make_shared<BatchNorm1d>(sizes[i + 1]));
      model->push_back(std::make_shared<ReLU>());
    }
  }
  for (const auto& [name, p] : model->named_parameters()) p.set_name(name);
  return model;
}

}  // namespace course
