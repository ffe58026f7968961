// bucket_assignment_given.cpp: lesson 10, given: the argument checks of the bucket
// assignment, reverse_order and mib_to_bytes. The assignment itself is the exercise
// (bucket_assignment.cpp).
#include <cmath>
#include <limits>
#include <string>

#include "bucket_assignment.h"
#include "error.h"

namespace course {

void check_bucket_assignment(const std::vector<int64_t>& bytes, const std::vector<size_t>& order,
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
