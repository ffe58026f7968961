// sync_batch_norm_given.cpp: lesson 11, given: SyncBatchNorm's layer (the forward that
// gathers every rank's statistics), the check of the gathered statistics and
// convert_sync_batchnorm. The combination of the statistics and the backward are the
// exercise (sync_batch_norm.cpp).
#include <string>

#include "error.h"
#include "sync_batch_norm.h"

namespace course {

BatchNormStats empty_gathered_stats(const std::vector<float>& gathered, int64_t channels) {
  const size_t c = static_cast<size_t>(channels), block = 2 * c + 1;
  if (channels < 1 || gathered.empty() || gathered.size() % block != 0) {
    throw ConfigError("sync_batch_norm_gather_stats: " + std::to_string(gathered.size()) +
                      " floats are not whole blocks of 2 * " + std::to_string(channels) + " + 1");
  }
  BatchNormStats stats;
  stats.mean.assign(c, 0.0f);
  stats.invstd.assign(c, 0.0f);
  stats.count = 0;
  return stats;
}

SyncBatchNorm::SyncBatchNorm(int64_t num_features, ProcessGroup& group, float eps, float momentum)
    : BatchNorm1d(num_features, eps, momentum), group_(&group) {}

Variable SyncBatchNorm::forward(const Variable& x) {
  check_input(x);
  if (!training()) return forward_eval(x);
  const int64_t c = num_features();
  const BatchNormStats local = batch_norm_stats(x.data(), eps());
  std::vector<float> mine(local.mean);
  mine.insert(mine.end(), local.invstd.begin(), local.invstd.end());
  mine.push_back(static_cast<float>(local.count));
  std::vector<float> gathered(mine.size() * static_cast<size_t>(group_->size()));
  group_->all_gather(mine, gathered);
  const BatchNormStats stats = sync_batch_norm_gather_stats(gathered, c, eps());
  if (stats.count < 2) {
    throw ConfigError("SyncBatchNorm on rank " + std::to_string(group_->rank()) + ": " +
                      std::to_string(stats.count) +
                      " row(s) over all ranks; training needs more than 1 value per channel");
  }
  batch_norm_update_running(stats, eps(), momentum(), running_mean_, running_var_,
                            num_batches_tracked_);
  Variable out(batch_norm_elemt(x.data(), stats, weight().data(), bias().data()));
  if (auto node = record<SyncBatchNormBackward>(out, {x, weight(), bias()})) {
    node->x = x.data();
    node->weight = weight().data();
    node->stats = stats;
    node->group = group_;
  }
  return out;
}

std::string SyncBatchNorm::describe() const {
  return "SyncBatchNorm(" + std::to_string(num_features()) + ", eps=" + std::to_string(eps()) +
         ", momentum=" + std::to_string(momentum()) + ")";
}

std::shared_ptr<LayerStack> convert_sync_batchnorm(const LayerStack& model, ProcessGroup& group) {
  auto out = std::make_shared<LayerStack>();
  for (const auto& layer : model.layers()) {
    const auto* bn = dynamic_cast<const BatchNorm1d*>(layer.get());
    if (bn == nullptr) {
      out->push_back(layer);
      continue;
    }
    auto sync =
        std::make_shared<SyncBatchNorm>(bn->num_features(), group, bn->eps(), bn->momentum());
    NamedTensors state;
    for (const auto& [name, t] : bn->state_dict()) state.emplace_back(name, t.clone());
    sync->load_state_dict(state);
    sync->set_training(bn->training());
    out->push_back(sync);
  }
  for (const auto& [name, p] : out->named_parameters()) p.set_name(name);
  return out;
}

}  // namespace course
