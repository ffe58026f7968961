// distributed_sampler_given.cpp: lesson 09, given: DistributedSampler's constructor and its
// argument checks. Each rank's share is the exercise (distributed_sampler.cpp).
#include <string>

#include "distributed_sampler.h"
#include "error.h"

namespace course {

void check_distributed_sampler(int64_t dataset_size, int num_replicas, int rank) {
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
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  check_distributed_sampler(dataset_size, num_replicas, rank);
  compute_sizes();
}

}  // namespace course
