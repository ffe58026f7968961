// grad_clip.h: gradient-norm clipping (torch.nn.utils.clip_grad_norm_), given code that the
// transformer lessons (17 to 19) share.
//
//   loss.backward();
//   const double norm = clip_grad_norm(model.parameters(), 1.0);   // before opt.step()
//
// With total = sqrt(Σ over every parameter's gradient of Σ g²), summed in double: when
// total > max_norm, every gradient is multiplied by max_norm / (total + 1e-6), so their
// joint norm becomes (just under) max_norm; otherwise nothing changes. The direction of the
// update is kept; only its length is capped, which keeps an early spike in the loss from
// throwing a transformer's weights far away. Parameters without a gradient are skipped.
//
// What this is not: clipping each gradient on its own (torch's clip_grad_value_), nor a
// norm across ranks (a data-parallel job clips after its all-reduce, where every rank
// holds the same gradients).
#pragma once

#include <vector>

#include "variable.h"

namespace course {

/// Scales the gradients of `params` in place as described above and returns the total
/// 2-norm they had before clipping. REQUIRES: max_norm > 0 (ConfigError otherwise).
double clip_grad_norm(const std::vector<Variable>& params, double max_norm);

/// The total 2-norm of the gradients of `params` (in double), without changing them.
double grad_norm(const std::vector<Variable>& params);

}  // namespace course
