// lr_schedule.h: linear warm-up, then cosine decay to a minimum (nanoGPT's get_lr), given
// code that the transformer lessons (17 to 19) share.
//
//   const CosineSchedule schedule{.max_lr = 3e-3, .min_lr = 3e-4, .warmup_steps = 40,
//                                 .decay_steps = 600};
//   optimizer.set_lr(schedule.lr(step));        // step = 0, 1, ... before each step()
//
// For step s (counting from 0), warm-up W and decay end D:
//
//   s <  W:       lr = max_lr · (s + 1) / (W + 1)          the ramp never gives 0
//   W <= s <= D:  r = (s − W) / (D − W),  lr = min_lr + ½ (1 + cos(π r)) (max_lr − min_lr)
//   s >  D:       lr = min_lr
//
// so the rate climbs to max_lr at s = W, falls along half a cosine to min_lr at s = D and
// stays there. The warm-up lets Adam's second-moment estimates settle before the steps get
// large; the decay anneals the last steps. nanoGPT sets D to the run's length and min_lr to
// max_lr / 10 (Chinchilla's choice).
#pragma once

#include <cstdint>
#include <string>

namespace course {

/// Linear warm-up and cosine decay (see the top of this file).
struct CosineSchedule {
  double max_lr = 1e-3;      ///< the peak, reached at warmup_steps
  double min_lr = 1e-4;      ///< the floor, from decay_steps on
  int64_t warmup_steps = 0;  ///< W: steps of linear ramp
  int64_t decay_steps = 1;   ///< D: the step where the cosine reaches min_lr

  /// The learning rate for step `step` (0-based). REQUIRES: 0 <= warmup_steps <= decay_steps,
  /// 0 < min_lr <= max_lr (problem() says what is wrong).
  double lr(int64_t step) const;
  /// "" when the fields satisfy lr()'s REQUIRES, else what does not.
  std::string problem() const;
};

}  // namespace course
