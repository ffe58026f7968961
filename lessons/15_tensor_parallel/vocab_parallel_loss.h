// vocab_parallel_loss.h: lesson 15: cross-entropy over logits whose classes are split
// across the tensor-parallel group (Megatron-LM's vocab_parallel_cross_entropy), so that no
// rank ever holds every logit.
//
//   Variable logits_t = head.forward(h);          // ColumnParallelLinear: [B, Cp / T]
//   Variable loss = vocab_parallel_cross_entropy(logits_t, targets, classes, tp);
//   loss.backward();                              // no communication in the loss's backward
//
// THE DERIVATION. For one example with logits z_1..z_C and target y:
//   loss = log Σ_c exp(z_c) - z_y = log Σ_c exp(z_c - m) - (z_y - m)   for any m
// Rank t holds z_c for c in its slice S_t. With m = max_c z_c (the stable choice):
//   1. m   = max over ranks of (max over S_t of z_c)                 all-reduce MAX, [B]
//   2. s   = Σ over ranks of Σ over S_t exp(z_c - m)                 } one all-reduce SUM
//      p   = Σ over ranks of (z_y - m if y in S_t, else 0)           } of [2B] values
//   3. loss = mean over the batch of (log s - p)
// The gradient: dloss/dz_c = (softmax_c - [c == y]) / B, and softmax_c = exp(z_c - m) / s
// needs only this rank's z_c and the two reduced numbers, so backward sends nothing. The
// gradient of the loss reaching this node is the same on every rank, and so is the loss.
// (Megatron sends three all-reduces, max, predicted logit and sum; here the last two
// travel as one message.)
//
// PADDING. When T does not divide the number of classes C, the classifier is padded to
// Cp = padded_classes(C, T) rows (ColumnParallelLinear's padded_out), the padding rows
// zeros. The loss masks them: a padded column c >= C takes no part in the max or the sum,
// and its gradient is 0, so the padding rows stay zero and the loss is exactly that of the
// C real classes. (Megatron pads its vocabulary to a multiple of 128 * T and does not
// mask: the padded tokens are real, never-seen classes of the softmax. Masking keeps the
// sharded model equal to the unsharded one.) E.g. C = 10, T = 4: Cp = 12, rank 3 holds
// classes 9, 10, 11 of which 10 and 11 are padding.
//
// Collective over `tp` (two all-reduces, forward only). Targets are class indices as
// floats, [B], the same on every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node.h"
#include "process_group.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// The smallest multiple of T that is >= classes.
int64_t padded_classes(int64_t classes, int T);

/// Mean cross-entropy of the batch (a scalar, the same on every rank). logits_t: this
/// rank's [B, Cp / T] columns, Cp = padded_classes(classes, T), rank t's first column is
/// class t * Cp / T. REQUIRES: targets [B] in [0, classes) (ConfigError naming the example
/// otherwise). Collective.
Variable vocab_parallel_cross_entropy(const Variable& logits_t, const Tensor& targets,
                                      int64_t classes, ProcessGroup& tp);

struct VocabParallelCrossEntropyBackward final : Node {
  Tensor softmax;                 ///< [B, Cp / T]: exp(z - m) / s, 0 in padded columns
  std::vector<int64_t> target_t;  ///< per example: the target's column here, or -1
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "VocabParallelCrossEntropyBackward"; }
};

}  // namespace course
