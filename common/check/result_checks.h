// result_checks.h: what the drivers and the collective suites check results with, written
// once: the reduce ops every check runs, a list of failed calls, and a hash of results that
// ranks compare to see they hold the same bits.
//
//   ResultChecker checker;
//   checker.check(reduce_call_name("all_reduce", count, op), data,
//                 expected_reduce(op, world, count), tolerance(op));
//   if (!checker.failures.empty()) ...          // the driver's FAIL names the first one
//
//   ResultHash hash;  hash.add(data);           // then compare hash.value() across ranks
//
// What this is not: the serial answers (collective_oracle.h) nor a test framework; the
// suites wrap these in EXPECTs (tests/collectives/suite.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "process_group.h"

namespace course {

/// The counts a collective is checked with on N ranks: 0, 1, N-1, N+1, 7N+3 and 65537.
/// N+1 and 65537 (a prime) are divisible by no N > 1; 65537 floats (256 KiB) are more
/// than a loopback socket buffers at first, so sends block for real. Sorted, no repeats.
std::vector<size_t> collective_counts(int world);

/// SUM, PRODUCT, MIN, MAX, AVG: every op a reducing collective is checked with.
const std::vector<ReduceOp>& all_reduce_ops();

/// "all_reduce of 1000 (sum)": a reducing call, as the checks name it.
std::string reduce_call_name(const std::string& call, size_t count, ReduceOp op);

/// Collects the calls whose results were wrong; prints the first five as they happen
/// ("<call>: 12 of 100 elements differ; first at [3]: got 5, expected 7").
struct ResultChecker {
  /// The calls that gave a wrong result, in order.
  std::vector<std::string> failures;
  /// Compares `got` with `want` (collective_oracle.h's describe_wrong, within `tol`).
  void check(const std::string& call, std::span<const float> got, std::span<const float> want,
             float tol = 0.0f);
};

/// FNV-1a over the bits of everything added: two ranks with the same value() hold the
/// same results, to the bit.
class ResultHash {
 public:
  /// Adds the bits of `values`, then their count.
  void add(std::span<const float> values);
  /// The hash so far.
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace course
