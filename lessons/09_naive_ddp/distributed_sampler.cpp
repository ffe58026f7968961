// distributed_sampler.cpp: lesson 09, part 1: each rank's share of an epoch (see
// distributed_sampler.h).
#include "distributed_sampler.h"

#include <numeric>

#include "error.h"

namespace course {

void DistributedSampler::compute_sizes() {
  // TODO(lesson09): num_samples_ (ceil, or floor with drop_last) and total_size_
  COURSE_TODO();
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  // TODO(lesson09): the shared order, padded from the front or cut, then every N-th from rank
  COURSE_TODO();
}

}  // namespace course
