// ddp_fixtures.h: what lesson 10's tests share: inputs with rank- and index-dependent
// values, a small MLP, the one-process oracle (the same model trained on the whole
// global batch), and comparisons.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../collectives/group_factory.h"
#include "module.h"
#include "ops.h"
#include "optimizer.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course::test {

/// `rows` examples of `features` inputs and `classes` targets; example i of batch `seed`
/// has its own values (no two rows alike, no all-ones).
inline std::pair<Tensor, Tensor> make_batch(int64_t rows, int64_t features, int64_t classes,
                                            int seed) {
  Tensor x = Tensor::empty({rows, features});
  Tensor y = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i) {
    y.data()[i] = static_cast<float>((i * 5 + seed) % classes);
    for (int64_t j = 0; j < features; ++j) {
      x.data()[i * features + j] =
          static_cast<float>(std::sin(0.37 * (i + 1) + 1.13 * j + 0.71 * seed)) +
          0.05f * static_cast<float>(j % 3);
    }
  }
  return {x, y};
}

/// Rows [begin, begin + count) of a batch, as its own tensors.
inline std::pair<Tensor, Tensor> slice_batch(const std::pair<Tensor, Tensor>& batch, int64_t begin,
                                             int64_t count) {
  return {batch.first.rows(begin, count).clone(), batch.second.rows(begin, count).clone()};
}

enum class OptimizerKind { sgd, adam };

inline std::unique_ptr<Optimizer> make_optimizer(OptimizerKind kind, std::vector<Variable> params) {
  if (kind == OptimizerKind::adam) {
    return std::make_unique<Adam>(std::move(params), AdamOptions{.lr = 0.01f});
  }
  return std::make_unique<Sgd>(std::move(params), SgdOptions{.lr = 0.1f, .momentum = 0.9f});
}

/// The largest |a - b| over every parameter of two models of one architecture.
inline float max_parameter_diff(Module& a, Module& b) {
  const std::vector<Variable> pa = a.parameters(), pb = b.parameters();
  float worst = 0;
  for (size_t i = 0; i < pa.size(); ++i)
    worst = std::max(worst, max_abs_diff(pa[i].data(), pb[i].data()));
  return worst;
}

/// A checksum of every gradient, all-gathered: entry r is rank r's.
inline std::vector<float> gathered_grad_sums(Module& model, ProcessGroup& group) {
  float local = 0;
  for (const Variable& p : model.parameters()) {
    if (!p.grad().defined()) continue;
    const std::vector<float> g = p.grad().to_vector();
    for (size_t i = 0; i < g.size(); ++i) local += g[i] * static_cast<float>(1 + i % 7);
  }
  std::vector<float> all(static_cast<size_t>(group.size()));
  group.all_gather(std::span<const float>(&local, 1), all);
  return all;
}

}  // namespace course::test
