// bucket_assignment.cpp: lesson 10, part 1: grouping gradients into buckets (see the header).
#include "bucket_assignment.h"

#include "error.h"

namespace course {

std::vector<BucketIndices> compute_bucket_assignment_by_size(const std::vector<int64_t>& bytes,
                                                             const std::vector<size_t>& order,
                                                             const std::vector<int64_t>& limits) {
  check_bucket_assignment(bytes, order, limits);
  // TODO(lesson10): fill a bucket in `order`, close it at its limit, move to the next limit
  COURSE_TODO();
}

}  // namespace course
