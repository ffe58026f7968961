// bucket_assignment.cpp: lesson 10, part 1: grouping gradients into buckets (see the header).
#include "bucket_assignment.h"

#include <cmath>
#include <limits>
#include <string>

#include "error.h"

namespace course {

namespace {

void check_arguments(const std::vector<int64_t>& bytes, const std::vector<size_t>& order,
                     const std::vector<int64_t>& limits) {
  if (limits.empty()) throw ConfigError("bucket assignment: no bucket size limit given");
  for (int64_t limit : limits) {
    if (limit < 0) {
      throw ConfigError("bucket assignment: negative bucket size limit " + std::to_string(limit));
    }
  }
  if (order.size() != bytes.size()) {
    throw ConfigError("bucket assignment: order lists " + std::to_string(order.size()) +
                      " parameters, but there are " + std::to_string(bytes.size()));
  }
  std::vector<bool> seen(bytes.size(), false);
  for (size_t index : order) {
    if (index >= bytes.size() || seen[index]) {
      throw ConfigError("bucket assignment: order is not a permutation of the " +
                        std::to_string(bytes.size()) + " parameters (index " +
                        std::to_string(index) + " is out of range or repeated)");
    }
    seen[index] = true;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] < 0) {
      throw ConfigError("bucket assignment: parameter " + std::to_string(i) + " has " +
                        std::to_string(bytes[i]) + " bytes");
    }
  }
}

}  // namespace

std::vector<BucketIndices> compute_bucket_assignment_by_size(const std::vector<int64_t>& bytes,
                                                             const std::vector<size_t>& order,
                                                             const std::vector<int64_t>& limits) {
  check_arguments(bytes, order, limits);
  std::vector<BucketIndices> buckets;
  // BEGIN SOLUTION: fill a bucket in `order`, close it at its limit, move to the next limit
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
  // END SOLUTION
  return buckets;
}

std::vector<size_t> reverse_order(size_t n) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  return order;
}

int64_t mib_to_bytes(double mib) {
  if (!(mib >= 0)) throw ConfigError("bucket size " + std::to_string(mib) + " MiB is negative");
  const double bytes = std::floor(mib * 1024.0 * 1024.0);
  if (bytes >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return static_cast<int64_t>(bytes);
}

}  // namespace course
