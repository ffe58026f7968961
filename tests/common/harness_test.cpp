// harness_test.cpp: tests of the test harness itself (tests/harness/harness.h).
//
// A harness that cannot see a failing rank makes every distributed test worthless, so
// each way a rank can go wrong is checked: a failed EXPECT, an exception, a crash, exit()
// inside the body, a hang. And after every run, no rank process is left.
// Run alone: ./build/<dir>/tests/common/test_common --gtest_filter='Harness*'
#include "harness.h"

#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "activity.h"
#include "child_group.h"
#include "error.h"
#include "socket.h"

namespace course::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// A pipe each rank writes its pid into, so the test can check afterwards that none lives.
class PidLog {
 public:
  PidLog() { EXPECT_EQ(::pipe2(fds_, O_CLOEXEC | O_NONBLOCK), 0); }
  ~PidLog() { ::close(fds_[0]), ::close(fds_[1]); }
  void write_mine() const {
    const pid_t pid = ::getpid();
    EXPECT_EQ(::write(fds_[1], &pid, sizeof(pid)), static_cast<ssize_t>(sizeof(pid)));
  }
  std::vector<pid_t> read_all() const {
    std::vector<pid_t> pids;
    pid_t pid;
    while (::read(fds_[0], &pid, sizeof(pid)) == static_cast<ssize_t>(sizeof(pid))) {
      pids.push_back(pid);
    }
    return pids;
  }

 private:
  int fds_[2] = {-1, -1};
};

void expect_all_gone(const std::vector<pid_t>& pids, size_t expected) {
  EXPECT_EQ(pids.size(), expected);
  for (pid_t pid : pids) {
    errno = 0;
    EXPECT_EQ(::kill(pid, 0), -1) << "rank process " << pid << " outlived the harness";
    EXPECT_EQ(errno, ESRCH);
  }
}

TEST(Harness, RanksShareTheStoreAndPass) {
  // World 5: every rank publishes a rank-dependent value, then reads everyone's.
  run_ranks(5, [](RankContext& ctx) {
    EXPECT_EQ(ctx.world, 5);
    ctx.store().set("value/" + std::to_string(ctx.rank), std::to_string(ctx.rank * ctx.rank + 3));
    for (int r = 0; r < ctx.world; ++r) {
      EXPECT_EQ(ctx.store().get("value/" + std::to_string(r)), std::to_string(r * r + 3));
    }
    EXPECT_EQ(ctx.store().add("sum", ctx.rank + 1) > 0, true);
    store_barrier(ctx.store(), "after-sum", ctx.world);
    EXPECT_EQ(ctx.store().add("sum", 0), 15);  // 1 + 2 + 3 + 4 + 5
  });
}

TEST(Harness, FailedExpectsAreReportedPerRank) {
  PidLog pids;
  const std::vector<RankOutcome> out = run_ranks_collect(3, [&](RankContext& ctx) {
    pids.write_mine();
    EXPECT_EQ(ctx.rank * 10 + 1, 11) << "planted failure";  // true on rank 1 only
  });
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].exit_code, 0);
  for (int r : {0, 2}) {
    EXPECT_EQ(out[r].exit_code, 1) << "rank " << r;
    EXPECT_NE(out[r].message.find("planted failure"), std::string::npos) << out[r].message;
    EXPECT_NE(out[r].message.find("harness_test.cpp"), std::string::npos) << out[r].message;
  }
  expect_all_gone(pids.read_all(), 3);
}

TEST(Harness, RunRanksTurnsARanksFailureIntoATestFailure) {
  EXPECT_NONFATAL_FAILURE(run_ranks(3,
                                    [](RankContext& ctx) {
                                      if (ctx.rank == 2) ADD_FAILURE() << "planted on rank 2";
                                    }),
                          "rank 2 of 3 failed an assertion");
}

TEST(Harness, AnExceptionIsReportedWithItsMessage) {
  const std::vector<RankOutcome> out = run_ranks_collect(2, [](RankContext& ctx) {
    if (ctx.rank == 1) throw std::runtime_error("boom from rank 1");
  });
  EXPECT_EQ(out[0].exit_code, 0);
  EXPECT_EQ(out[1].exit_code, 2);
  EXPECT_NE(out[1].message.find("boom from rank 1"), std::string::npos) << out[1].message;

  RanksOptions tolerant;
  tolerant.exceptions_fail = false;  // then run_ranks reports nothing
  run_ranks(
      2,
      [](RankContext& ctx) {
        if (ctx.rank == 1) throw std::runtime_error("expected");
      },
      tolerant);
}

TEST(Harness, ACrashingRankIsReportedWithItsSignal) {
  PidLog pids;
  const std::vector<RankOutcome> out = run_ranks_collect(3, [&](RankContext& ctx) {
    pids.write_mine();
    if (ctx.rank == 1) {
      const rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);  // no core file from this planted crash
      ::raise(SIGSEGV);
    }
  });
  EXPECT_EQ(out[1].signal, SIGSEGV);
  EXPECT_NE(out[1].message.find("SIGSEGV"), std::string::npos) << out[1].message;
  EXPECT_EQ(out[0].exit_code, 0);
  EXPECT_EQ(out[2].exit_code, 0);
  expect_all_gone(pids.read_all(), 3);
}

TEST(Harness, ExitInsideTheBodyIsReported) {
  const std::vector<RankOutcome> out = run_ranks_collect(2, [](RankContext& ctx) {
    if (ctx.rank == 1) std::exit(0);
  });
  EXPECT_EQ(out[0].exit_code, 0);
  EXPECT_EQ(out[1].exit_code, 3);
  EXPECT_NE(out[1].message.find("exit()"), std::string::npos) << out[1].message;
}

TEST(Harness, AHangingRankTimesOutAndIsKilled) {
  PidLog pids;
  RanksOptions options;
  options.timeout = 1500ms;
  const auto t0 = Clock::now();
  const std::vector<RankOutcome> out = run_ranks_collect(
      3,
      [&](RankContext& ctx) {
        pids.write_mine();
        if (ctx.rank == 2) std::this_thread::sleep_for(1h);
      },
      options);
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, 1400ms);
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(out[2].timed_out);
  EXPECT_EQ(out[2].message,
            "timed out after 1500 ms; rank 2 was still running (not blocked in a socket call)")
      << "rank 0: " << out[0].exit_code << " " << out[0].signal << " " << out[0].message;
  EXPECT_FALSE(out[1].timed_out);
  EXPECT_EQ(out[1].exit_code, 0);
  expect_all_gone(pids.read_all(), 3);
}

TEST(Harness, ATimeoutSaysWhatTheRankWasBlockedIn) {
  // Rank 0 waits for bytes that rank 1 never sends: the report names the socket call.
  RanksOptions options;
  options.timeout = 1500ms;
  const std::vector<RankOutcome> out = run_ranks_collect(
      2,
      [&](RankContext& ctx) {
        if (ctx.rank == 1) {
          Listener listener("127.0.0.1", 0);
          ctx.store().set("port", std::to_string(listener.port()));
          Socket conn = listener.accept_any();
          std::this_thread::sleep_for(1h);
        } else {
          Socket sock = Socket::connect("127.0.0.1", std::stoi(ctx.store().get("port")));
          sock.set_peer_name("rank 1");
          char byte;
          sock.recv_all(&byte, 1);
        }
      },
      options);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].timed_out);
  EXPECT_EQ(out[0].message, "timed out after 1500 ms; rank 0 was still in recv from rank 1");
  EXPECT_TRUE(out[1].timed_out);
  EXPECT_EQ(out[1].message,
            "timed out after 1500 ms; rank 1 was still running (not blocked in a socket call)");
}

TEST(Harness, ATimeoutNamesTheAlgorithmARankWasIn) {
  // The same hang inside an ActivityLabel: the report says which algorithm to look at.
  RanksOptions options;
  options.timeout = 1500ms;
  const std::vector<RankOutcome> out = run_ranks_collect(
      2,
      [&](RankContext& ctx) {
        if (ctx.rank == 1) {
          Listener listener("127.0.0.1", 0);
          ctx.store().set("port", std::to_string(listener.port()));
          Socket conn = listener.accept();
          std::this_thread::sleep_for(1h);
        } else {
          Socket sock = Socket::connect("127.0.0.1", std::stoi(ctx.store().get("port")));
          sock.set_peer_name("rank 1");
          const ActivityLabel outer("all_reduce, ring (lesson 05)");
          const ActivityLabel label("all_reduce_naive (the comparison)");  // the innermost wins
          char byte;
          sock.recv_all(&byte, 1);
        }
      },
      options);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].message,
            "timed out after 1500 ms; rank 0 was still in all_reduce_naive (the comparison): "
            "recv from rank 1");
}

#if defined(__SANITIZE_THREAD__)
// Built with -fsanitize=thread (make sanitize-tsan): a data race inside one rank makes
// ThreadSanitizer report and exit 66 after the body passed; the harness fails that rank.
TEST(Harness, ASanitizerReportInARankFailsIt) {
  const std::vector<RankOutcome> out = run_ranks_collect(2, [](RankContext& ctx) {
    if (ctx.rank != 1) return;
    static int shared = 0;  // written by two threads with nothing ordering them
    std::thread a([] { shared += 1; });
    std::thread b([] { shared += 2; });
    a.join();
    b.join();
  });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].exit_code, 0);
  EXPECT_EQ(out[1].exit_code, 3) << out[1].message;
  EXPECT_NE(out[1].message.find("exited with code 66"), std::string::npos) << out[1].message;
}
#endif

TEST(Harness, OthersAreStoppedSoonAfterOneFails) {
  PidLog pids;
  int asleep[2];   // the others say "about to sleep" here, not through rank 0's store
  int gave_up[2];  // rank 0 writes the time it gave up here
  ASSERT_EQ(::pipe2(asleep, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(gave_up, O_CLOEXEC), 0);
  const std::vector<RankOutcome> out = run_ranks_collect(3, [&](RankContext& ctx) {
    pids.write_mine();
    if (ctx.rank == 0) {
      // Give up once the others sleep, with no store call in flight (so that they cannot
      // fail on their own when rank 0's store goes away; they must be stopped).
      char two[2];
      for (size_t got = 0; got < 2;) {
        const ssize_t k = ::read(asleep[0], two + got, 2 - got);
        if (k <= 0) throw std::runtime_error("the asleep pipe");
        got += static_cast<size_t>(k);
      }
      const int64_t now = Clock::now().time_since_epoch().count();
      (void)!::write(gave_up[1], &now, sizeof now);
      throw std::runtime_error("rank 0 gives up");
    }
    (void)!::write(asleep[1], "z", 1);
    std::this_thread::sleep_for(1h);  // would wait for rank 0 forever
  });
  const auto end = Clock::now();
  int64_t when = 0;
  ASSERT_EQ(::read(gave_up[0], &when, sizeof when), static_cast<ssize_t>(sizeof when));
  ::close(asleep[0]), ::close(asleep[1]), ::close(gave_up[0]), ::close(gave_up[1]);
  // Stopped after the harness's grace (3 s) and well before any timeout; measured from the
  // failure, so that a loaded machine's slow start of the ranks does not count.
  EXPECT_LT(end - Clock::time_point(Clock::duration(when)), 7s);
  EXPECT_EQ(out[0].exit_code, 2);
  for (int r : {1, 2}) {
    EXPECT_EQ(out[r].signal, SIGKILL) << "rank " << r;
    EXPECT_FALSE(out[r].timed_out);
    EXPECT_EQ(out[r].message, "stopped after rank 0 failed");
  }
  expect_all_gone(pids.read_all(), 3);
}

// A rank killed before it could unlink its shared-memory segments (lesson 12 names them
// /dev/shm/course.<pid>.*) leaves none behind: the harness's reap removes them. Another
// process's segment stays.
TEST(Harness, AKilledRanksSharedMemoryIsRemovedWithIt) {
  const std::string foreign = "/" + shm_owner_prefix(::getpid()) + "harness-test";
  const int fd = ::shm_open(foreign.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  PidLog pids;
  const std::vector<RankOutcome> out = run_ranks_collect(2, [&](RankContext& ctx) {
    pids.write_mine();
    for (const char* tag : {"0-1.0.abc", "0-2.1.def"}) {
      const std::string name = "/" + shm_owner_prefix(::getpid()) + tag;
      const int made = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (made < 0) throw std::runtime_error("shm_open " + name);
      ::close(made);
    }
    ctx.store().set("made/" + std::to_string(ctx.rank), "1");
    if (ctx.rank == 1) {
      ctx.store().wait({"made/0"});
      throw std::runtime_error("rank 1 gives up");
    }
    std::this_thread::sleep_for(1h);  // killed, its segments still named
  });
  EXPECT_EQ(out[0].signal, SIGKILL);
  for (pid_t pid : pids.read_all()) {
    for (const char* tag : {"0-1.0.abc", "0-2.1.def"}) {
      const std::string path = "/dev/shm/" + shm_owner_prefix(pid) + tag;
      EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " outlived its rank";
    }
  }
  EXPECT_EQ(::access(("/dev/shm" + foreign).c_str(), F_OK), 0) << "not a rank's: kept";
  ::shm_unlink(foreign.c_str());
}

// A rank at a stub's TODO is what run_ranks reports, even when another rank's error (here
// the broken store connection that rank 0's TODO causes) ended first.
TEST(Harness, RunRanksReportsOnlyTheTodoWhenARankHitOne) {
  ::testing::TestPartResultArray failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
    run_ranks(3, [](RankContext& ctx) {
      if (ctx.rank == 2) throw std::runtime_error("connection closed by the store");
      if (ctx.rank == 0) {
        std::this_thread::sleep_for(300ms);
        throw NotImplementedError("lessons/99_topic/exercise.cpp", 12);
      }
      std::this_thread::sleep_for(1h);
    });
  }
  ASSERT_EQ(failures.size(), 1);
  const std::string message = failures.GetTestPartResult(0).message();
  EXPECT_NE(message.find("rank 0 of 3 threw"), std::string::npos) << message;
  EXPECT_NE(message.find("not implemented: lessons/99_topic/exercise.cpp:12"), std::string::npos)
      << message;
}

// A stub's TODO ends the run at once (no grace), whether exceptions fail the test or are
// what it expects; any other failure leaves the others their grace to end on their own.
TEST(Harness, ARankAtATodoStopsTheOthersAtOnceOtherFailuresLeaveThemTheGrace) {
  for (const bool exceptions_fail : {true, false}) {
    SCOPED_TRACE(exceptions_fail ? "exceptions fail" : "exceptions expected");
    PidLog pids;
    RanksOptions options;
    options.exceptions_fail = exceptions_fail;
    const auto t0 = Clock::now();
    const std::vector<RankOutcome> out = run_ranks_collect(
        3,
        [&](RankContext& ctx) {
          pids.write_mine();
          if (ctx.rank == 1) {
            ctx.store().wait({"asleep/0", "asleep/2"});
            throw NotImplementedError("lessons/99_topic/exercise.cpp", 12);
          }
          ctx.store().set("asleep/" + std::to_string(ctx.rank), "1");
          std::this_thread::sleep_for(1h);
        },
        options);
    EXPECT_LT(Clock::now() - t0, 1500ms);  // the grace is 3 s
    EXPECT_NE(out[1].message.find("not implemented: lessons/99_topic/exercise.cpp:12"),
              std::string::npos)
        << out[1].message;
    for (int r : {0, 2}) {
      EXPECT_EQ(out[r].signal, SIGKILL) << "rank " << r;
      EXPECT_EQ(out[r].message, "stopped after rank 1 failed") << "rank " << r;
    }
    expect_all_gone(pids.read_all(), 3);
  }
  // The TODO comes after another rank's failure (as a peer's broken connection may be seen
  // first): the others are stopped then, not at the end of the first failure's grace.
  {
    const auto t0 = Clock::now();
    const std::vector<RankOutcome> out = run_ranks_collect(3, [&](RankContext& ctx) {
      if (ctx.rank == 2) throw std::runtime_error("rank 2: peer closed");
      if (ctx.rank == 1) {
        std::this_thread::sleep_for(300ms);
        throw NotImplementedError("lessons/99_topic/exercise.cpp", 12);
      }
      std::this_thread::sleep_for(1h);
    });
    EXPECT_LT(Clock::now() - t0, 1500ms);
    EXPECT_EQ(out[0].signal, SIGKILL);
    EXPECT_EQ(out[1].exit_code, 2);
  }
  // Rank 1 throws something else; rank 0 needs 800 ms more and is left to finish.
  const std::vector<RankOutcome> out = run_ranks_collect(2, [&](RankContext& ctx) {
    if (ctx.rank == 1) throw std::runtime_error("rank 1 gives up");
    std::this_thread::sleep_for(800ms);
  });
  EXPECT_EQ(out[1].exit_code, 2);
  EXPECT_EQ(out[0].signal, 0);
  EXPECT_EQ(out[0].exit_code, 0) << out[0].message;
}

}  // namespace
}  // namespace course::test
