// distributed_sampler.cpp: lesson 09, part 1: each rank's share of an epoch (see
// distributed_sampler.h).
#include "distributed_sampler.h"

#include <numeric>
#include <string>

#include "error.h"

namespace course {

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  if (dataset_size < 0) {
    throw ConfigError("DistributedSampler: dataset_size " + std::to_string(dataset_size) +
                      " is negative");
  }
  if (num_replicas < 1) {
    throw ConfigError("DistributedSampler: num_replicas " + std::to_string(num_replicas) +
                      " must be at least 1 (the world size)");
  }
  if (rank < 0 || rank >= num_replicas) {
    throw ConfigError("DistributedSampler: rank " + std::to_string(rank) + " is outside [0, " +
                      std::to_string(num_replicas - 1) +
                      "]: pass this process's rank and the world size");
  }
  // TODO(lesson09): num_samples_ (ceil, or floor with drop_last) and total_size_
  COURSE_TODO();
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  // TODO(lesson09): the shared order, padded from the front or cut, then every N-th from rank
  COURSE_TODO();
}

}  // namespace course
