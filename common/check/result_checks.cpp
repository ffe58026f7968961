// result_checks.cpp: see result_checks.h.
#include "result_checks.h"

#include <algorithm>
#include <iostream>

#include "collective_oracle.h"

namespace course {

std::vector<size_t> collective_counts(int world) {
  const size_t n = static_cast<size_t>(world);
  std::vector<size_t> counts{0, 1, n - 1, n + 1, 7 * n + 3, 65537};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

const std::vector<ReduceOp>& all_reduce_ops() {
  static const std::vector<ReduceOp> ops{ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN,
                                         ReduceOp::MAX, ReduceOp::AVG};
  return ops;
}

std::string reduce_call_name(const std::string& call, size_t count, ReduceOp op) {
  return call + " of " + std::to_string(count) + " (" + reduce_op_name(op) + ")";
}

void ResultChecker::check(const std::string& call, std::span<const float> got,
                          std::span<const float> want, float tol) {
  const std::string wrong = describe_wrong(got, want, tol);
  if (wrong.empty()) return;
  if (failures.size() < 5) std::cout << call << ": " << wrong << std::endl;
  failures.push_back(call);
}

void ResultHash::add(std::span<const float> values) {
  constexpr uint64_t kPrime = 0x100000001b3ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size_bytes(); ++i) hash_ = (hash_ ^ bytes[i]) * kPrime;
  hash_ = (hash_ ^ values.size()) * kPrime;
}

}  // namespace course
