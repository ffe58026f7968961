// naive_ddp_given.cpp: lesson 09, given: NaiveDdp's constructor, the dispatch of
// sync_gradients to the variant, and the variant names. broadcast_state and the two
// gradient syncs are the exercise (naive_ddp.cpp).
#include "error.h"
#include "model_check.h"
#include "naive_ddp.h"

namespace course {

std::string grad_sync_name(GradSync variant) {
  return variant == GradSync::flat ? "flat" : "per-param";
}

GradSync parse_grad_sync(const std::string& name) {
  if (name == "per-param") return GradSync::per_param;
  if (name == "flat") return GradSync::flat;
  throw ConfigError("unknown gradient sync variant '" + name + "': use per-param or flat");
}

NaiveDdp::NaiveDdp(Module& model, ProcessGroup& pg, GradSync variant)
    : model_(model), pg_(pg), variant_(variant), params_(model.named_parameters()) {
  verify_same_parameters(model_, pg_);
  broadcast_state();
}

void NaiveDdp::sync_gradients() {
  check_gradients_present(params_, pg_);
  if (variant_ == GradSync::flat) {
    sync_gradients_flat();
  } else {
    sync_gradients_per_param();
  }
}

int64_t NaiveDdp::messages_per_step() const {
  // The gradient check's all_gather, then the all-reduces.
  return 1 + (variant_ == GradSync::flat ? 1 : static_cast<int64_t>(params_.size()));
}

std::string NaiveDdp::describe() const {
  return variant_ == GradSync::flat
             ? "naive DDP, flat: one all-reduce of all " + std::to_string(params_.size()) +
                   " gradients in one buffer"
             : "naive DDP, per-param: one all-reduce per parameter (" +
                   std::to_string(params_.size()) + ")";
}

}  // namespace course
