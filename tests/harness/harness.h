// harness.h: run a test body on N ranks, as forked processes over real sockets.
//
// run_ranks(4, [](course::test::RankContext& ctx) { ... EXPECT_EQ(...); });
//
// Each rank is a fork of the test process with its rank recorded (course::who() names
// it). Rank 0 hosts a StoreServer on a free loopback port; every rank gets a StoreClient
// and the job token, which is everything lesson 01's mesh needs. The parent waits for all
// ranks under `timeout`. The test fails, naming the rank, when a rank
//   - fails a GoogleTest assertion (EXPECT_* / ASSERT_*),
//   - throws (the exception's what() is reported),
//   - crashes (signal) or calls exit() with a non-zero code,
//   - is still running at the timeout (then every rank is killed, and the report says
//     what each was blocked in: "timed out after 60 s; rank 2 was still in recv from
//     rank 1", see activity.h).
// When one rank fails, the others are killed after a short grace period (at once when it
// hit a stub's TODO: nothing they report then would add to it). No process outlives
// run_ranks.
//
// What this is not: a thread-based harness; ranks share nothing but sockets.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "store.h"

namespace course::test {

struct RankContext {
  int rank = 0;
  int world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string token;
  /// This rank's connection to the store hosted by rank 0.
  StoreClient& store() { return *store_; }

  std::unique_ptr<StoreClient> store_;
};

/// The default time limit of run_ranks: COURSE_TEST_TIMEOUT_S seconds (the grader sets
/// it per test), else 60 s.
std::chrono::milliseconds default_ranks_timeout();

struct RanksOptions {
  std::chrono::milliseconds timeout = default_ranks_timeout();
  /// When true, an exception escaping the body counts as a failure (the default).
  /// Tests that expect a rank to throw catch it themselves with EXPECT_THROW.
  bool exceptions_fail = true;
};

/// Runs `body` on `world` ranks and reports every failing rank through ADD_FAILURE().
void run_ranks(int world, const std::function<void(RankContext&)>& body,
               const RanksOptions& options = {});

/// What each rank did, for tests of the harness itself and of failure handling.
struct RankOutcome {
  int exit_code = 0;  ///< 0 passed, 1 assertion failed, 2 exception, 3 exited early
  int signal = 0;
  bool timed_out = false;
  std::string message;
};
/// Like run_ranks but returns each rank's outcome instead of failing the test.
std::vector<RankOutcome> run_ranks_collect(int world, const std::function<void(RankContext&)>& body,
                                           const RanksOptions& options = {});

}  // namespace course::test
