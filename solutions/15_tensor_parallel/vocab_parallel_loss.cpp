// vocab_parallel_loss.cpp: lesson 15: the vocabulary-parallel cross-entropy, forward (two
// all-reduces) and backward (none), as derived in vocab_parallel_loss.h.
#include "vocab_parallel_loss.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "error.h"
#include "node.h"

namespace course {

int64_t padded_classes(int64_t classes, int T) {
  return (classes + T - 1) / T * T;
}

Variable vocab_parallel_cross_entropy(const Variable& logits_t, const Tensor& targets,
                                      int64_t classes, ProcessGroup& tp) {
  const int T = tp.size();
  const int64_t B = logits_t.size(0), n = logits_t.size(1);
  if (logits_t.dim() != 2 || n * T != padded_classes(classes, T) || targets.numel() != B) {
    throw ConfigError("vocab_parallel_cross_entropy: logits " + shape_str(logits_t.shape()) +
                      " on tensor-parallel rank " + std::to_string(tp.rank()) + " of " +
                      std::to_string(T) + " for " + std::to_string(classes) +
                      " classes (padded to " + std::to_string(padded_classes(classes, T)) +
                      ") and " + std::to_string(targets.numel()) + " targets");
  }
  // This rank's first class, and how many of its columns are real classes (not padding).
  const int64_t first = tp.rank() * n;
  const int64_t real = std::clamp<int64_t>(classes - first, 0, n);
  const float* y = targets.data();
  for (int64_t i = 0; i < B; ++i) {
    if (!(y[i] >= 0 && y[i] < static_cast<float>(classes))) {
      throw ConfigError("vocab_parallel_cross_entropy: target " + std::to_string(y[i]) +
                        " of example " + std::to_string(i) + " is not a class in [0, " +
                        std::to_string(classes) + ")");
    }
  }
  Tensor softmax = Tensor::zeros({B, n});
  std::vector<int64_t> target_t(static_cast<size_t>(B), -1);
  float loss_sum = 0;
  // BEGIN SOLUTION: all-reduce MAX of the row maxima, one SUM of [s, p], the loss, softmax
  // Step 1: the row maxima over the real columns, then over the group.
  const float* z = logits_t.data().data();
  std::vector<float> m(static_cast<size_t>(B), -FLT_MAX);
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t c = 0; c < real; ++c) m[i] = std::max(m[i], z[i * n + c]);
  }
  tp.all_reduce(m, ReduceOp::MAX);
  // Step 2: exp(z - m) over the real columns (kept for backward), its sum and the target's
  //    shifted logit, both [B], reduced in one message: [s_0..s_B-1, p_0..p_B-1].
  std::vector<float> sp(static_cast<size_t>(2 * B), 0.0f);
  float* e = softmax.data();
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t c = 0; c < real; ++c) {
      e[i * n + c] = std::exp(z[i * n + c] - m[i]);
      sp[i] += e[i * n + c];
    }
    const auto target = static_cast<int64_t>(y[i]);
    if (target >= first && target < first + n) {
      target_t[i] = target - first;
      sp[B + i] = z[i * n + target_t[i]] - m[i];
    }
  }
  tp.all_reduce(sp, ReduceOp::SUM);
  // Step 3: loss_i = log s_i - p_i; softmax = exp(z - m) / s.
  for (int64_t i = 0; i < B; ++i) {
    loss_sum += std::log(sp[i]) - sp[B + i];
    for (int64_t c = 0; c < real; ++c) e[i * n + c] /= sp[i];
  }
  // END SOLUTION
  Variable loss(Tensor::scalar(loss_sum / static_cast<float>(B)));
  if (auto node = record<VocabParallelCrossEntropyBackward>(loss, {logits_t})) {
    node->softmax = softmax;
    node->target_t = std::move(target_t);
  }
  return loss;
}

std::vector<Tensor> VocabParallelCrossEntropyBackward::apply(const Tensor& g) {
  // g is the scalar dL/dloss. dloss/dz_c = (softmax_c - [c == target]) / B on this rank's
  // columns; padded columns have softmax 0 and are never the target.
  const int64_t B = softmax.size(0), n = softmax.size(1);
  Tensor grad = Tensor::empty({B, n});
  // BEGIN SOLUTION: (softmax - one-hot of the target where it is here) * g / B
  const float scale = g.item() / static_cast<float>(B);
  const float* s = softmax.data();
  float* d = grad.data();
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t c = 0; c < n; ++c) d[i * n + c] = s[i * n + c] * scale;
    if (target_t[i] >= 0) d[i * n + target_t[i]] -= scale;
  }
  // END SOLUTION
  return {grad};
}

}  // namespace course
