// driver_frozen_test.cpp: a rank whose collective times out on a frozen rank 0 (which
// hosts the store) prints its verdict about one monitor grace after the timeout, as it does
// for a frozen rank other than 0 (common/runtime/driver.h, collective_monitor.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "../support/driver_env.h"
#include "collective_monitor.h"
#include "driver.h"
#include "error.h"
#include "harness.h"
#include "socket.h"

namespace course {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_continued = 0;

bool is_stopped(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/stat");
  std::string line;
  std::getline(in, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && line.compare(paren, 3, ") T") == 0;
}

// Rank 1 stops rank 0 (SIGSTOP) inside the lesson, then its collective fails with a
// timeout, as its socket would. Before, rank 1 spent the monitor's 3 s and then 12 s more
// asking the frozen store for a TODO: about 50 s in all behind a 30 s socket timeout.
TEST(DriverFrozen, AFrozenRankZeroIsNamedOneGraceAfterTheTimeout) {
  test::run_ranks(2, [](test::RankContext& ctx) {
    test::set_driver_env(ctx);
    DriverConfig config;
    config.name = "lesson99";
    config.title = "a frozen rank 0";
    std::string arg0 = "lesson99";
    char* argv[] = {arg0.data()};
    std::string pid0;
    Clock::time_point t0;
    testing::internal::CaptureStdout();
    const int code = run_driver(1, argv, config, nullptr, [&](DriverContext& d) -> Verdict {
      auto monitor = CollectiveMonitor::for_group(d.store(), "g", d.rank(), d.world());
      const uint64_t k = monitor->enter("all_reduce");
      if (d.rank() == 0) {  // idles, outside any store call, until rank 1 lets it go on
        ::signal(SIGCONT, [](int) { g_continued = 1; });
        d.store().set("pid/0", std::to_string(::getpid()));
        while (g_continued == 0) std::this_thread::sleep_for(10ms);
        throw Error("resumed");
      }
      pid0 = d.store().get("pid/0");
      ::kill(std::stoi(pid0), SIGSTOP);
      for (int i = 0; i < 1000 && !is_stopped(pid0); ++i) std::this_thread::sleep_for(10ms);
      t0 = Clock::now();
      try {
        throw TimeoutError("timed out after 30 s waiting for 64 bytes from rank 0");
      } catch (...) {
        monitor->rethrow_with_report(k, "all_reduce");
      }
    });
    const Clock::duration after_timeout = Clock::now() - t0;
    if (ctx.rank == 1) ::kill(std::stoi(pid0), SIGCONT);  // rank 0 goes on, and ends
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, 1) << out;
    if (ctx.rank == 1) {
      EXPECT_NE(out.find("rank 0, which hosts it, is likely stopped"), std::string::npos) << out;
      // 1.5 s for the monitor, 1 s for the driver's look for a TODO; 15 s before.
      EXPECT_LT(after_timeout, 6s) << out;
    }
  });
}

}  // namespace
}  // namespace course
