// stage_module.cpp: see stage_module.h.
#include "stage_module.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "bench_stats.h"
#include "clock.h"
#include "error.h"
#include "ops.h"
#include "rng.h"

namespace course {

std::vector<double> layer_parameter_counts(const std::vector<int64_t>& sizes) {
  std::vector<double> counts;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    counts.push_back(static_cast<double>(sizes[i] * sizes[i + 1] + sizes[i + 1]));
  }
  return counts;
}

std::vector<double> measure_layer_seconds(const std::vector<int64_t>& sizes, int64_t rows) {
  std::vector<double> seconds;
  const int layers = static_cast<int>(sizes.size()) - 1;
  for (int i = 0; i < layers; ++i) {
    StageModule layer(sizes, /*seed=*/1, i, i + 1);
    Rng rng(7);
    std::vector<float> values(static_cast<size_t>(rows * sizes[i]));
    for (float& v : values) v = static_cast<float>(rng.uniform(-1.0f, 1.0f));
    const Tensor x = Tensor::from_vector({rows, sizes[i]}, values);
    std::vector<double> runs;
    for (int run = 0; run < 5; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      Variable out = layer.forward(Variable(x, /*requires_grad=*/true));
      out.backward(Tensor::full(out.shape(), 1.0f));
      runs.push_back(seconds_since(t0));
      layer.zero_grad();
    }
    seconds.push_back(median(runs));
  }
  return seconds;
}

std::vector<int> partition_layers(const std::vector<double>& costs, int stages) {
  const int n = static_cast<int>(costs.size());
  if (stages < 1 || stages > n) {
    throw ConfigError("cannot cut " + std::to_string(n) + " layer(s) into " +
                      std::to_string(stages) + " non-empty stage(s): use at most " +
                      std::to_string(n) + " stages, or a deeper model (--layers)");
  }
  std::vector<double> prefix(n + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + costs[i];
  // best[p][j]: the smallest largest stage cost of layers [0, j) in p stages; cut[p][j]
  // the start of the last of them.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int p = 1; p <= stages; ++p) {
    for (int j = p; j <= n; ++j) {
      for (int i = j - 1; i >= p - 1; --i) {  // last stage [i, j): latest start first
        const double worst = std::max(best[p - 1][i], prefix[j] - prefix[i]);
        if (worst < best[p][j]) {
          best[p][j] = worst;
          cut[p][j] = i;
        }
      }
    }
  }
  std::vector<int> bounds(stages + 1, n);
  for (int p = stages; p >= 1; --p) bounds[p - 1] = cut[p][bounds[p]];
  return bounds;
}

StageModule::StageModule(const std::vector<int64_t>& sizes, uint64_t seed, int first, int last)
    : first_(first), last_(last) {
  const int layers = static_cast<int>(sizes.size()) - 1;
  if (first < 0 || first >= last || last > layers) {
    throw ConfigError("a pipeline stage holds layers [first, last) of 0.." +
                      std::to_string(layers) + " with first < last (got [" + std::to_string(first) +
                      ", " + std::to_string(last) + "))");
  }
  in_ = sizes[first];
  out_ = sizes[last];
  ends_model_ = last == layers;
  // The whole model, drawn as one process draws it; this stage keeps its own layers (the
  // rest is freed when `full` goes). Children keep the full model's position names.
  Rng rng(seed);
  const std::shared_ptr<Sequential> full = make_mlp(sizes, rng);
  const size_t begin = 2 * static_cast<size_t>(first);
  const size_t end = std::min(full->size(), 2 * static_cast<size_t>(last));
  for (size_t i = begin; i < end; ++i) {
    layers_.push_back(register_module(std::to_string(i), full->layer(i)));
  }
}

Variable StageModule::forward(const Variable& x) {
  int64_t bytes = 4 * x.numel();
  Variable h = x;
  for (const auto& layer : layers_) {
    h = layer->forward(h);
    bytes += 4 * h.numel();
  }
  saved_bytes_ = bytes;
  return h;
}

std::string StageModule::describe() const {
  std::string text =
      "StageModule(layers [" + std::to_string(first_) + ", " + std::to_string(last_) + "))";
  for (const auto& layer : layers_) text += "\n  " + layer->describe();
  return text;
}

}  // namespace course
