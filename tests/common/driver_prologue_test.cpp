// driver_prologue_test.cpp: the steps of a driver's prologue that live in common
// (common/runtime/driver.h): the header line and the self-check's verdict, printed by rank
// 0 only.
#include <gtest/gtest.h>

#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "driver.h"

namespace course {
namespace {

DriverContext context(int rank, int world) {
  DriverContext ctx;
  ctx.env_.rank = rank;
  ctx.env_.world_size = world;
  ctx.args_.backend = "gloo";
  return ctx;
}

// What `body` prints on std::cout.
template <typename Body>
std::string printed(Body body) {
  std::ostringstream out;
  std::streambuf* old = std::cout.rdbuf(out.rdbuf());
  body();
  std::cout.rdbuf(old);
  return out.str();
}

TEST(DriverPrologue, RankZeroPrintsTheHeaderWithItsDetail) {
  const DriverContext zero = context(0, 4);
  EXPECT_EQ(printed([&] { print_driver_header(zero, "link: loopback"); }),
            "backend gloo, 4 rank(s), link: loopback\n");
  EXPECT_EQ(printed([&] { print_driver_header(zero, ""); }), "backend gloo, 4 rank(s)\n");
  const DriverContext one = context(1, 4);
  EXPECT_EQ(printed([&] { print_driver_header(one, "link: loopback"); }), "");
}

TEST(DriverPrologue, AProblemIsAFailNamingIt) {
  const DriverContext zero = context(0, 2);
  std::optional<Verdict> failed;
  const std::string out = printed(
      [&] { failed = self_check_failure(zero, "all_reduce_ring: rank 1 differs", "passed"); });
  ASSERT_TRUE(failed.has_value());
  EXPECT_FALSE(failed->passed);
  EXPECT_EQ(failed->detail, "self-check: all_reduce_ring: rank 1 differs");
  EXPECT_EQ(out, "");
}

TEST(DriverPrologue, APassIsRankZerosLineAndNothingToReturn) {
  const DriverContext zero = context(0, 2);
  std::optional<Verdict> failed;
  EXPECT_EQ(printed([&] { failed = self_check_failure(zero, "", "self-check passed"); }),
            "self-check passed\n");
  EXPECT_FALSE(failed.has_value());
  const DriverContext one = context(1, 2);
  EXPECT_EQ(printed([&] { failed = self_check_failure(one, "", "self-check passed"); }), "");
  EXPECT_FALSE(failed.has_value());
}

}  // namespace
}  // namespace course
