// serial_executor_test.cpp: the ordered channels under the tcp backend (serial_executor.h)
// and the Work they hand out (work.h).
//
//   ./build/solutions/tests/common/test_common --gtest_filter='SerialExecutor.*:FutureWork.*'
#include "serial_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "error.h"
#include "work.h"

namespace course {
namespace {

using namespace std::chrono_literals;

// Invariant 1: submitted and inline operations run one at a time, in issue order.
TEST(SerialExecutor, InlineRunsAfterEverythingSubmittedBeforeIt) {
  SerialExecutor channel("test");
  std::vector<int> order;
  std::vector<WorkPtr> works;
  for (int i = 0; i < 5; ++i) {
    works.push_back(channel.submit(
        [&order, i] {
          std::this_thread::sleep_for(2ms);
          order.push_back(i);
        },
        "op " + std::to_string(i)));
  }
  channel.run_inline([&] { order.push_back(5); });
  for (const WorkPtr& w : works) EXPECT_TRUE(w->is_completed());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(channel.idle());
}

// Invariant 3: the hook sees every error first and may replace it; the executor goes on.
TEST(SerialExecutor, ErrorHookSeesAndMayReplaceErrors) {
  std::atomic<int> seen{0};
  SerialExecutor channel("test", [&](const std::exception_ptr&) -> std::exception_ptr {
    ++seen;
    return std::make_exception_ptr(ProtocolError("replaced"));
  });
  EXPECT_THROW(channel.run_inline([] { throw NetworkError("inline"); }), ProtocolError);
  WorkPtr failed = channel.submit([] { throw NetworkError("async"); }, "failing op");
  EXPECT_THROW(failed->wait(), ProtocolError);
  EXPECT_THROW(failed->wait(), ProtocolError);  // every wait rethrows
  WorkPtr fine = channel.submit([] {}, "fine op");
  fine->wait();
  EXPECT_EQ(seen.load(), 2);
}

// Invariant 4: a run_on_wait operation that nobody has started runs on the thread that
// waits for it; in order, once, whoever runs it. The worker may win the race to a single
// operation (on a loaded machine, 20 times in a row), so the trials go on, 20 at least and
// up to 2000, until the waiter has won one.
TEST(SerialExecutor, RunOnWaitRunsOnTheWaiterInOrder) {
  SerialExecutor channel("test");
  int on_waiter = 0;
  std::vector<int> order;
  int trials = 0;
  for (int trial = 0; trial < 2000 && (trial < 20 || on_waiter == 0); ++trial, ++trials) {
    std::vector<WorkPtr> works;
    std::thread::id ran_on;
    for (int i = 0; i < 4; ++i) {
      works.push_back(channel.submit(
          [&order, &ran_on, i, trial] {
            order.push_back(4 * trial + i);
            ran_on = std::this_thread::get_id();
          },
          "op " + std::to_string(i), /*run_on_wait=*/true));
    }
    works.back()->wait();
    for (const WorkPtr& w : works) EXPECT_TRUE(w->is_completed());
    if (ran_on == std::this_thread::get_id()) ++on_waiter;
  }
  std::vector<int> expected(static_cast<size_t>(4 * trials));
  for (int i = 0; i < 4 * trials; ++i) expected[i] = i;
  EXPECT_EQ(order, expected);
  EXPECT_GT(on_waiter, 0) << "no run_on_wait operation ran on the waiting thread";
  EXPECT_TRUE(channel.idle());
}

// Invariant 4, errors: an operation the waiter ran reports through on_error, then its Work.
TEST(SerialExecutor, RunOnWaitErrorsReachTheWork) {
  std::atomic<int> seen{0};
  SerialExecutor channel("test", [&](const std::exception_ptr& e) -> std::exception_ptr {
    ++seen;
    return e;
  });
  WorkPtr failed = channel.submit([] { throw NetworkError("async"); }, "failing op", true);
  EXPECT_THROW(failed->wait(), NetworkError);
  EXPECT_THROW(failed->wait(), NetworkError);
  EXPECT_EQ(seen.load(), 1);
}

// A Work whose operation has not run yet: is_completed() answers at once, wait(timeout)
// throws TimeoutError naming the operation, and a later wait() succeeds.
TEST(FutureWork, WaitTimesOutThenCompletes) {
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  SerialExecutor channel("test");
  WorkPtr work = channel.submit([gate] { gate.wait(); }, "the gated op");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(work->is_completed());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 100ms);
  try {
    work->wait(20ms);
    ADD_FAILURE() << "wait returned before the operation ran";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("the gated op"), std::string::npos) << e.what();
  }
  release.set_value();
  work->wait();
  EXPECT_TRUE(work->is_completed());
}

// wait_all waits for every Work even after one failed, then rethrows the first error.
TEST(FutureWork, WaitAllWaitsForEveryOneThenRethrowsTheFirstError) {
  SerialExecutor a("a"), b("b");
  std::atomic<bool> slow_done{false};
  WorkPtr failing = a.submit([] { throw ConfigError("first"); }, "failing");
  WorkPtr slow = b.submit(
      [&] {
        std::this_thread::sleep_for(30ms);
        slow_done = true;
      },
      "slow");
  EXPECT_THROW(wait_all({failing, nullptr, slow, completed_work()}), ConfigError);
  EXPECT_TRUE(slow_done.load());
}

}  // namespace
}  // namespace course
