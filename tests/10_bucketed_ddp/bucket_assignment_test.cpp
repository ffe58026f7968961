// bucket_assignment_test.cpp: lesson 10, part 1, against hand-worked cases.
//
//   ./build/solutions/test_10 --gtest_filter='BucketAssignment*'
#include "bucket_assignment.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "error.h"

namespace course {
namespace {

constexpr int64_t KiB = 1024;
constexpr int64_t MiB = 1024 * KiB;
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();

struct Case {
  std::string name;
  std::vector<int64_t> bytes;
  std::vector<size_t> order;
  std::vector<int64_t> limits;
  std::vector<BucketIndices> expected;
};

// Worked by hand from THE RULE in bucket_assignment.h.
const std::vector<Case>& cases() {
  static const std::vector<Case> table = {
      // 1 MiB reaches the first limit exactly (>=); 6 MiB overshoots 5; 2 + 4 overshoot 5.
      {"first limit, then overshoot",
       {4 * MiB, 2 * MiB, 6 * MiB, 1 * MiB},
       {3, 2, 1, 0},
       {1 * MiB, 5 * MiB},
       {{3}, {2}, {1, 0}}},
      // 3 KiB: 1 + 1 stays below 3, + 2 overshoots to 4; the rest, 2 + 1 = 3, closes.
      {"overshoot by the last parameter",
       {1 * KiB, 1 * KiB, 2 * KiB, 2 * KiB, 1 * KiB},
       {0, 1, 2, 3, 4},
       {3 * KiB},
       {{0, 1, 2}, {3, 4}}},
      // A parameter larger than the cap gets a bucket of its own, wherever it falls.
      {"a huge parameter",
       {100, 100, 40 * MiB, 100, 100},
       {4, 3, 2, 1, 0},
       {1 * MiB, 25 * MiB},
       {{4, 3, 2}, {1, 0}}},
      {"a huge parameter alone", {40 * MiB, 100, 100}, {0, 1, 2}, {1, 25 * MiB}, {{0}, {1, 2}}},
      // The first bucket is small (512 KiB), the others take up to 1 MiB.
      {"first-bucket limit",
       {256 * KiB, 256 * KiB, 256 * KiB, 512 * KiB, 512 * KiB, 256 * KiB},
       {5, 4, 3, 2, 1, 0},
       {512 * KiB, 1 * MiB},
       {{5, 4}, {3, 2, 1}, {0}}},
      // Limits after the first repeat their last value; the third limit is reached once.
      {"three limits, the last repeating",
       {10, 10, 10, 10, 10, 10, 10},
       {0, 1, 2, 3, 4, 5, 6},
       {10, 30, 20},
       {{0}, {1, 2, 3}, {4, 5}, {6}}},
      // Cap 0: every parameter is a bucket (what --bucket-cap-mb 0 means).
      {"per-parameter extreme", {4, 8, 12}, {2, 1, 0}, {0}, {{2}, {1}, {0}}},
      {"per-parameter with a zero-size parameter", {4, 0, 12}, {2, 1, 0}, {0, 0}, {{2}, {1}, {0}}},
      // No limit reached: one bucket, in `order`.
      {"one-bucket extreme", {4, 8, 12, 16}, {3, 2, 1, 0}, {kNoLimit}, {{3, 2, 1, 0}}},
      // The order is what it is (a rebuilt order is not a reversal).
      {"arbitrary ready order", {8, 8, 8, 8}, {1, 3, 0, 2}, {16}, {{1, 3}, {0, 2}}},
      {"a single parameter", {12}, {0}, {1 * MiB, 25 * MiB}, {{0}}},
  };
  return table;
}

TEST(BucketAssignment, HandWorkedCases) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(compute_bucket_assignment_by_size(c.bytes, c.order, c.limits), c.expected);
  }
}

// Every parameter lands in exactly one bucket, every bucket is non-empty, and every bucket
// but the last reached its limit while the same bucket minus its last parameter did not.
TEST(BucketAssignment, InvariantsOnAnIrregularModel) {
  std::vector<int64_t> bytes;
  for (int i = 0; i < 37; ++i) bytes.push_back(4 * ((i * 7919) % 1000 + (i % 5 == 0 ? 90000 : 1)));
  const std::vector<int64_t> limits{64 * KiB, 256 * KiB};
  const std::vector<size_t> order = reverse_order(bytes.size());
  const std::vector<BucketIndices> buckets =
      compute_bucket_assignment_by_size(bytes, order, limits);
  std::vector<size_t> flat;
  for (size_t b = 0; b < buckets.size(); ++b) {
    ASSERT_FALSE(buckets[b].empty());
    int64_t size = 0;
    for (size_t i : buckets[b]) size += bytes[i];
    const int64_t limit = limits[std::min(b, limits.size() - 1)];
    if (b + 1 < buckets.size()) {
      EXPECT_GE(size, limit) << "bucket " << b;
      EXPECT_LT(size - bytes[buckets[b].back()], limit) << "bucket " << b;
    }
    flat.insert(flat.end(), buckets[b].begin(), buckets[b].end());
  }
  EXPECT_EQ(flat, order);
  EXPECT_GT(buckets.size(), 3u);
}

TEST(BucketAssignment, HelpersAndBadArguments) {
  EXPECT_EQ(reverse_order(4), (std::vector<size_t>{3, 2, 1, 0}));
  EXPECT_EQ(mib_to_bytes(0.25), 256 * KiB);
  EXPECT_EQ(mib_to_bytes(25), 25 * MiB);
  EXPECT_EQ(mib_to_bytes(1e300), kNoLimit);
  EXPECT_THROW(mib_to_bytes(-1), ConfigError);
  EXPECT_THROW(compute_bucket_assignment_by_size({4, 4}, {0, 1}, {}), ConfigError);
  EXPECT_THROW(compute_bucket_assignment_by_size({4, 4}, {0, 0}, {8}), ConfigError);
  EXPECT_THROW(compute_bucket_assignment_by_size({4, 4}, {0}, {8}), ConfigError);
  EXPECT_THROW(compute_bucket_assignment_by_size({4, 4}, {0, 2}, {8}), ConfigError);
  EXPECT_THROW(compute_bucket_assignment_by_size({4, 4}, {0, 1}, {-1}), ConfigError);
}

}  // namespace
}  // namespace course
