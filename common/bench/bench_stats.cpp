// bench_stats.cpp: see bench_stats.h.
#include "bench_stats.h"

#include <algorithm>
#include <span>

namespace course {

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  const auto middle = samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2);
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

double slowest_median(const std::vector<double>& samples, ProcessGroup& group) {
  float mine = static_cast<float>(median(samples));
  group.all_reduce(std::span<float>(&mine, 1), ReduceOp::MAX);
  return mine;
}

std::vector<double> slowest_samples(const std::vector<double>& samples, ProcessGroup& group) {
  std::vector<float> values(samples.begin(), samples.end());
  group.all_reduce(values, ReduceOp::MAX);
  return {values.begin(), values.end()};
}

}  // namespace course
