// bucket_assignment.cpp: lesson 10, part 1: grouping gradients into buckets (see the header).
#include "bucket_assignment.h"

#include "error.h"

namespace course {

std::vector<BucketIndices> compute_bucket_assignment_by_size(const std::vector<int64_t>& bytes,
                                                             const std::vector<size_t>& order,
                                                             const std::vector<int64_t>& limits) {
  check_bucket_assignment(bytes, order, limits);
  // BEGIN SOLUTION: fill a bucket in `order`, close it at its limit, move to the next limit
  std::vector<BucketIndices> buckets;
  BucketIndices open;
  int64_t open_bytes = 0;
  size_t limit = 0;
  for (size_t index : order) {
    open.push_back(index);
    open_bytes += bytes[index];
    if (open_bytes >= limits[limit]) {
      buckets.push_back(std::move(open));
      open = {};
      open_bytes = 0;
      if (limit + 1 < limits.size()) ++limit;
    }
  }
  if (!open.empty()) buckets.push_back(std::move(open));
  return buckets;
  // END SOLUTION
}

}  // namespace course
