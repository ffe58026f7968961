// mixed_precision.cpp: lesson 18, given: one training step in bf16 or fp16 with float32
// master weights (THE STEP, numbered as in mixed_precision.h).
#include "mixed_precision.h"

#include <vector>

#include "error.h"
#include "grad_clip.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {

namespace {

// Step 1's copies: the float32 master values of every parameter, set aside while the
// parameters hold their 16-bit roundings, and put back by restore() (or, should the
// forward or backward throw, by the destructor: the model never keeps 16-bit weights).
class MasterWeights {
 public:
  MasterWeights(const std::vector<Variable>& params, Precision p) : params_(params) {
    if (p == Precision::fp32) return;  // nothing to round: the parameters are the masters
    masters_.reserve(params.size());
    for (const Variable& param : params) {
      masters_.push_back(param.data().clone());
      round_to_(param.data(), p);
    }
  }
  ~MasterWeights() { restore(); }
  MasterWeights(const MasterWeights&) = delete;
  MasterWeights& operator=(const MasterWeights&) = delete;

  void restore() {
    for (size_t i = 0; i < masters_.size(); ++i) copy_(params_[i].data(), masters_[i]);
    masters_.clear();
  }

 private:
  const std::vector<Variable>& params_;
  std::vector<Tensor> masters_;
};

}  // namespace

GptStepResult mixed_precision_step(const GptStepContext& c, const MixedPrecision& mp) {
  if (mp.precision == Precision::fp32 && mp.scaler != nullptr) {
    throw ConfigError(
        "mixed_precision_step: a loss scaler with fp32: float32 gradients do not underflow; "
        "pass no scaler, or train in fp16");
  }
  GptStepResult r;
  c.optimizer.zero_grad();

  // 1. The 16-bit weights the forward and backward see.
  MasterWeights masters(c.params, mp.precision);

  // 2. Forward, the logits in 16 bits, the loss in float32 (scaled), backward.
  const Variable logits = cast(c.model.forward(Variable(c.batch.inputs)), mp.precision);
  const Variable loss = cross_entropy(logits, c.batch.targets);
  r.loss = loss.item();
  (mp.scaler ? mp.scaler->scale(loss) : loss).backward();

  // 3. The masters back; the gradients as 16-bit weights' gradients hold them; unscaled.
  masters.restore();
  if (mp.precision != Precision::fp32) {
    std::vector<Tensor> grads;
    grads.reserve(c.params.size());
    for (const Variable& p : c.params) grads.push_back(p.grad());
    if (mp.flushed != nullptr) {
      const FlushCount step = count_flushed(grads, mp.precision);
      mp.flushed->nonzero += step.nonzero;
      mp.flushed->flushed += step.flushed;
      mp.flushed->overflow += step.overflow;
    }
    for (const Tensor& g : grads) round_to_(g, mp.precision);
  }

  // 4. Clip, step and update, in float32; a found inf or NaN skips all but the update.
  c.optimizer.set_lr(c.lr);
  if (mp.scaler == nullptr) {
    r.grad_norm = clip_grad_norm(c.params, c.clip);
    c.optimizer.step();
    return r;
  }
  if (!mp.scaler->unscale_(c.params)) r.grad_norm = clip_grad_norm(c.params, c.clip);
  r.skipped = !mp.scaler->step(c.optimizer);
  mp.scaler->update();
  return r;
}

}  // namespace course
