// bn_mlp.h: lesson 11, the capstone's model: lesson 07's MLP with a BatchNorm1d after every
// hidden Linear, in a container that can hand out its layers (given).
//
//   Rng rng(seed);
//   std::shared_ptr<LayerStack> model = make_bn_mlp({784, 256, 256, 10}, rng);
//   // 0: Linear(784, 256)  1: BatchNorm1d(256)  2: ReLU
//   // 3: Linear(256, 256)  4: BatchNorm1d(256)  5: ReLU   6: Linear(256, 10)
//   model = convert_sync_batchnorm(*model, *bn_group);   // sync_batch_norm.h
//   model->set_training(false);                          // model.eval()
//
// LayerStack is lesson 07's Sequential (children "0", "1", ... in order, so the state dict
// reads "0.weight", "1.running_mean", ...) plus what torch gets from model.modules():
// its layers, typed, for train()/eval() and for swapping BatchNorm for SyncBatchNorm.
//
// What this is not: a general module tree; one level of layers is all the capstone needs.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "module.h"
#include "rng.h"

namespace course {

class LayerStack : public Module {
 public:
  /// Appends `layer`, named by its position.
  void push_back(std::shared_ptr<Module> layer);
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  const std::vector<std::shared_ptr<Module>>& layers() const { return layers_; }
  /// torch's model.train() / model.eval(): sets every BatchNorm1d layer's mode.
  void set_training(bool training);

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

/// Linear(sizes[0], sizes[1]), BatchNorm1d(sizes[1]), ReLU, ..., Linear(sizes[n-2],
/// sizes[n-1]). The Linears draw from `rng` in order, as make_mlp. REQUIRES: >= 2 sizes.
std::shared_ptr<LayerStack> make_bn_mlp(const std::vector<int64_t>& sizes, Rng& rng);

}  // namespace course
