// distributed_sampler.cpp: lesson 09, part 1: each rank's share of an epoch (see
// distributed_sampler.h).
#include "distributed_sampler.h"

#include <numeric>

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
  check_distributed_sampler(dataset_size, num_replicas, rank);
  // TODO(lesson09): num_samples_ (ceil, or floor with drop_last) and total_size_
  COURSE_TODO();
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  // TODO(lesson09): the shared order, padded from the front or cut, then every N-th from rank
  COURSE_TODO();
}

}  // namespace course
