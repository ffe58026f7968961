// distributed_sampler.cpp: lesson 09, part 1: each rank's share of an epoch (see
// distributed_sampler.h).
#include "distributed_sampler.h"

#include <numeric>

#include "error.h"

namespace course {

void DistributedSampler::compute_sizes() {
  // BEGIN SOLUTION: num_samples_ (ceil, or floor with drop_last) and total_size_
  const int64_t n = dataset_size_, N = num_replicas_;
  num_samples_ = drop_last_ ? n / N : (n + N - 1) / N;
  total_size_ = num_samples_ * N;
  // END SOLUTION
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  // BEGIN SOLUTION: the shared order, padded from the front or cut, then every N-th from rank
  std::vector<int64_t> order;
  if (shuffle_) {
    order = RandomSampler(dataset_size_, seed_).indices(epoch);
  } else {
    order.resize(static_cast<size_t>(dataset_size_));
    std::iota(order.begin(), order.end(), 0);
  }
  const auto total = static_cast<size_t>(total_size_);
  if (order.size() > total) {
    order.resize(total);  // drop_last: the tail waits for another epoch
  } else {
    const size_t n = order.size();
    for (size_t i = n; i < total; ++i) order.push_back(order[i % n]);  // from the front
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) {
    mine.push_back(order[i]);
  }
  return mine;
  // END SOLUTION
}

}  // namespace course
