// grad_scaler.cpp: lesson 18, the exercise: dynamic loss scaling (THE RULES, THE FLOOR and
// ERRORS are at the top of grad_scaler.h).
#include "grad_scaler.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "ops.h"

namespace course {

namespace {

// 65536, 0.5, 1e+38: a scale or factor as a message shows it.
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options) : options_(options) {
  const auto refuse = [](const std::string& what) {
    throw ConfigError("GradScaler: " + what + "; torch's defaults are init_scale 65536, " +
                      "growth_factor 2, backoff_factor 0.5, growth_interval 2000");
  };
  if (!(options.init_scale > 0) || !std::isfinite(options.init_scale)) {
    refuse("init_scale " + number(options.init_scale) + " must be finite and > 0");
  }
  if (!(options.growth_factor > 1) || !std::isfinite(options.growth_factor)) {
    refuse("growth_factor " + number(options.growth_factor) + " must be > 1 (it grows the scale)");
  }
  if (!(options.backoff_factor > 0 && options.backoff_factor < 1)) {
    refuse("backoff_factor " + number(options.backoff_factor) +
           " must be in (0, 1) (it shrinks the scale)");
  }
  if (options.growth_interval < 1) {
    refuse("growth_interval " + std::to_string(options.growth_interval) + " must be >= 1");
  }
  if (!(options.min_scale > 0)) {
    refuse("min_scale " + number(options.min_scale) + " must be > 0");
  }
  scale_ = options.init_scale;
}

Variable GradScaler::scale(const Variable& loss) const {
  // TODO(lesson18): loss times the scale, as an op of the graph (ops.h's scale)
  COURSE_TODO();
}

bool GradScaler::unscale_(const std::vector<Variable>& params) {
  if (unscaled_) {
    throw ConfigError(
        "GradScaler: unscale_() has already been called since the last update(): the "
        "gradients are unscaled already; call it once per step, before step()");
  }
  // TODO(lesson18): 1/scale (in double, then float) times every defined grad; note inf or NaN
  COURSE_TODO();
  unscaled_ = true;
  return found_inf_;
}

bool GradScaler::step(Optimizer& optimizer) {
  // TODO(lesson18): unscale_ unless done this step; the optimizer steps only without an inf
  COURSE_TODO();
}

void GradScaler::update() {
  if (!unscaled_ && !stepped_) {
    throw ConfigError("GradScaler: update() at step " + std::to_string(steps_) +
                      " with no unscale_() or step() since the last update(): call "
                      "step(optimizer) first");
  }
  double next = scale_;
  // TODO(lesson18): an inf backs off and restarts the count; growth_interval clean steps grow
  COURSE_TODO();
  // TODO(lesson18): below min_scale: ScaleCollapse naming steps_ and skipped_in_a_row_
  COURSE_TODO();
  scale_ = next;
  ++steps_;
  unscaled_ = false;
  found_inf_ = false;
  stepped_ = false;
}

}  // namespace course
