// grad_scaler.h: lesson 18, part 2 (your code in grad_scaler.cpp): dynamic loss scaling
// for fp16, torch.amp.GradScaler's rules.
//
//   GradScaler scaler;                           // scale 65536, x2 after 2000 clean steps
//   Variable loss = cross_entropy(logits, targets);
//   scaler.scale(loss).backward();               // gradients of (loss x scale)
//   scaler.unscale_(params);                     // gradients / scale; inf or NaN noted
//   clip_grad_norm(params, 1.0);                 // clipping sees the true gradients
//   bool stepped = scaler.step(optimizer);       // skipped when an inf or NaN was found
//   scaler.update();                             // x0.5 after a skip; x2 after N clean steps
//
// WHY. fp16 holds nothing below 2^-24 (precision.h). A language model's gradients are
// small: the loss is a mean over B x S tokens, so dL/dlogits is (p - onehot) / (B S), and
// many of its products fall below fp16's range and flush to zero. Multiplying the loss by
// S (the scale) multiplies every gradient by S (backward is linear in its seed), lifting
// them into range; dividing by S in float32, before anything reads them, gives the true
// gradients back. Too large a scale overflows to inf: the step is skipped and S halved.
//
// THE RULES (torch's): scale starts at init_scale. Per step: scale(loss) multiplies by the
// scale; unscale_ multiplies every defined gradient by 1/scale in float32 and records
// whether any element is inf or NaN (found_inf); step(optimizer) unscales first if
// unscale_ was not called this step, then steps the optimizer only when found_inf is false;
// update() then changes the scale: after a found inf, scale *= backoff_factor and the
// count of clean steps restarts from 0; otherwise the count grows by one and, on reaching
// growth_interval, scale *= growth_factor and the count restarts. update() ends the step
// (the next unscale_ is allowed again).
//
// ERRORS (ConfigError): unscale_ twice in one step (torch's "unscale_() has already been
// called on this optimizer since the last update()"); update() with no unscale_ or step
// this step; options out of range (a factor that does not shrink or grow, a scale <= 0).
// THE FLOOR (this course's, not torch's): when update() would take the scale below
// min_scale, it throws ScaleCollapse naming the step (counted from 0 by update() calls)
// and the run of skipped steps: the gradients overflow even unscaled, so no scale will
// rescue the run (a smaller learning rate, or bf16, might).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "error.h"
#include "optimizer.h"
#include "variable.h"

namespace course {

struct GradScalerOptions {
  double init_scale = 65536.0;     ///< 2^16, torch's
  double growth_factor = 2.0;      ///< > 1
  double backoff_factor = 0.5;     ///< in (0, 1)
  int64_t growth_interval = 2000;  ///< clean steps before growing, >= 1
  double min_scale = 1.0;          ///< the floor (see THE FLOOR); > 0
};

/// The scale fell below its floor (see THE FLOOR).
class ScaleCollapse : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

class GradScaler {
 public:
  /// ConfigError when an option is out of range (naming it).
  explicit GradScaler(const GradScalerOptions& options = {});

  /// loss x scale (a new node of the graph: its backward multiplies by the scale too).
  Variable scale(const Variable& loss) const;
  /// Every defined grad of `params` multiplied by 1 / scale, in place; found_inf() is then
  /// true when any element is inf or NaN. Returns found_inf().
  bool unscale_(const std::vector<Variable>& params);
  /// Unscales `optimizer`'s parameters if unscale_ was not called this step, then calls
  /// optimizer.step() unless found_inf(). Returns whether it stepped.
  bool step(Optimizer& optimizer);
  /// The scale for the next step (see THE RULES); ScaleCollapse below min_scale.
  void update();

  double get_scale() const { return scale_; }
  /// Whether this step's unscale_ met an inf or NaN.
  bool found_inf() const { return found_inf_; }
  /// Clean steps since the scale last changed.
  int64_t growth_tracker() const { return growth_tracker_; }
  /// update() calls so far (the step number ScaleCollapse names).
  int64_t steps() const { return steps_; }
  /// Steps skipped so far, and in a row up to the last update().
  int64_t skipped_steps() const { return skipped_; }
  int64_t skipped_in_a_row() const { return skipped_in_a_row_; }
  const GradScalerOptions& options() const { return options_; }

 private:
  GradScalerOptions options_;
  double scale_ = 0;
  bool unscaled_ = false;   // unscale_ ran this step
  bool found_inf_ = false;  // ... and found an inf or NaN
  bool stepped_ = false;    // step() ran this step
  int64_t growth_tracker_ = 0;
  int64_t steps_ = 0;
  int64_t skipped_ = 0;
  int64_t skipped_in_a_row_ = 0;
};

}  // namespace course
