// lr_schedule.cpp: CosineSchedule (see lr_schedule.h).
#include "lr_schedule.h"

#include <cmath>
#include <numbers>

namespace course {

double CosineSchedule::lr(int64_t step) const {
  if (step < warmup_steps) {
    return max_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps + 1);
  }
  if (step > decay_steps) return min_lr;
  if (decay_steps == warmup_steps) return max_lr;  // no decay: step W is the peak
  const double ratio =
      static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - warmup_steps);
  const double coeff = 0.5 * (1.0 + std::cos(std::numbers::pi * ratio));
  return min_lr + coeff * (max_lr - min_lr);
}

std::string CosineSchedule::problem() const {
  if (warmup_steps < 0 || decay_steps < warmup_steps) {
    return "the schedule needs 0 <= warm-up steps (" + std::to_string(warmup_steps) +
           ") <= decay steps (" + std::to_string(decay_steps) + ")";
  }
  if (!(min_lr > 0) || !(min_lr <= max_lr)) {
    return "the schedule needs 0 < min_lr (" + std::to_string(min_lr) + ") <= max_lr (" +
           std::to_string(max_lr) + ")";
  }
  return "";
}

}  // namespace course
