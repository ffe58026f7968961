// dataset.cpp: see dataset.h.
#include "dataset.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "error.h"

namespace course {

Dataset dataset_head(const Dataset& data, int64_t count) {
  if (count < 0 || count > data.size()) {
    throw ConfigError("dataset_head: asked for " + std::to_string(count) + " examples of " +
                      std::to_string(data.size()));
  }
  return {data.inputs.rows(0, count), data.targets.rows(0, count), data.classes};
}

Standardization input_statistics(const Dataset& data) {
  if (data.size() == 0) return {};
  const std::span<const float> x = data.inputs.span();
  double total = 0, total_sq = 0;
  for (float v : x) {
    total += v;
    total_sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(x.size());
  const double mean = total / n;
  const double var = std::max(total_sq / n - mean * mean, 0.0);
  return {static_cast<float>(mean), static_cast<float>(var > 0 ? std::sqrt(var) : 1.0)};
}

void standardize_(Dataset& data, const Standardization& s) {
  if (!(s.stddev > 0)) {
    throw ConfigError("standardize_: stddev must be > 0, got " + std::to_string(s.stddev));
  }
  const float inv = 1.0f / s.stddev;
  for (float& v : data.inputs.span()) v = (v - s.mean) * inv;
}

}  // namespace course
