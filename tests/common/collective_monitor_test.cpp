// Tests of the collective monitor (common/runtime/collective_monitor.h): on 4 forked ranks,
// each rank "runs" collectives by entering them in the monitor, then fails one the way a
// socket would (a TimeoutError), and checks what its error says.
#include "collective_monitor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "error.h"
#include "harness.h"

namespace course {
namespace {

using namespace std::chrono_literals;
using test::RankContext;

constexpr int kWorld = 4;

// A monitor of the test's own, on a second store connection, with a short grace.
std::unique_ptr<CollectiveMonitor> make_monitor(RankContext& ctx, const std::string& group,
                                                bool record_entries = false) {
  return std::make_unique<CollectiveMonitor>(ctx.store().connect_another(), group, ctx.rank,
                                             ctx.world, 1500ms, record_entries);
}

// Collective `seq` (`op`) fails on this rank with a TimeoutError; returns the message the
// monitor rethrows (it must stay a TimeoutError).
std::string fail_collective(CollectiveMonitor& monitor, uint64_t seq, const std::string& op,
                            const std::string& error) {
  try {
    try {
      throw TimeoutError(error);
    } catch (...) {
      monitor.rethrow_with_report(seq, op);
    }
  } catch (const TimeoutError& e) {
    return e.detail();
  }
  ADD_FAILURE() << "the monitor changed the error's type";
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CollectiveMonitor, NamesTheRankThatStoppedEnteringCollectives) {
  test::run_ranks(kWorld, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "stopped");
    // Every rank runs collectives 1 and 2; rank 2 then stays away (busy elsewhere) while the
    // others enter collective 3 and fail in it, each waiting for rank 2 in its own way.
    monitor->leave(monitor->enter("broadcast"));
    monitor->leave(monitor->enter("all_reduce"));
    const uint64_t k = ctx.rank == 2 ? 0 : monitor->enter("all_reduce");
    store_barrier(ctx.store(), "entered", ctx.world);  // every count is in place
    if (ctx.rank == 2) {
      std::this_thread::sleep_for(2500ms);  // past the others' grace
    } else {
      EXPECT_EQ(k, 3u);
      const std::string message = fail_collective(
          *monitor, k, "all_reduce", "timed out after 1 s waiting for 64 bytes from rank 1");
      EXPECT_TRUE(has(message,
                      "collective monitor: collective 3 (all_reduce) of group stopped "
                      "failed here"))
          << message;
      EXPECT_TRUE(has(message,
                      "rank 2 had not reached it: its last collective of this group is "
                      "collective 2 (all_reduce), and it is outside the collectives"))
          << message;
      for (int r : {0, 1, 3}) {
        EXPECT_FALSE(has(message, "rank " + std::to_string(r) + " had")) << message;
      }
      EXPECT_FALSE(has(message, "frozen")) << message;
      EXPECT_TRUE(has(message, "The error here: timed out after 1 s")) << message;
    }
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

// Rank 2 stops itself (SIGSTOP) where it stands; once every other rank has its diagnosis,
// rank 0 lets it go on (SIGCONT) so that the run ends.
void freeze_rank_2_until_diagnosed(RankContext& ctx) {
  if (ctx.rank == 2) {
    ctx.store().set("pid/2", std::to_string(::getpid()));
    ::raise(SIGSTOP);
  }
}
// The others fail only once rank 2 is really stopped (state T in /proc), however slow
// the machine.
void wait_until_rank_2_is_frozen(RankContext& ctx) {
  const std::string stat = "/proc/" + ctx.store().get("pid/2") + "/stat";
  for (int i = 0; i < 1000; ++i) {
    std::ifstream in(stat);
    std::string line;
    std::getline(in, line);
    const size_t paren = line.rfind(')');
    if (paren != std::string::npos && line.compare(paren, 3, ") T") == 0) return;
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << "rank 2 did not stop";
}
void release_rank_2(RankContext& ctx) {
  store_barrier(ctx.store(), "diagnosed", ctx.world - 1);
  if (ctx.rank == 0) ::kill(std::stoi(ctx.store().get("pid/2")), SIGCONT);
}

TEST(CollectiveMonitor, NamesAFrozenRank) {
  test::run_ranks(kWorld, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "frozen");
    monitor->leave(monitor->enter("all_reduce"));
    const uint64_t k = monitor->enter("all_reduce");
    store_barrier(ctx.store(), "entered", ctx.world);  // no rank is still on its way to k
    if (ctx.rank == 2) {
      freeze_rank_2_until_diagnosed(ctx);
    } else {
      wait_until_rank_2_is_frozen(ctx);
      const std::string message = fail_collective(*monitor, k, "all_reduce", "timed out");
      EXPECT_TRUE(has(message, "rank 2 is frozen or dead: no answer within 1500 ms")) << message;
      EXPECT_FALSE(has(message, "had not reached")) << message;
      release_rank_2(ctx);
    }
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

TEST(CollectiveMonitor, AllRanksFailingTogetherNameNobody) {
  test::run_ranks(kWorld, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "together");
    for (int i = 0; i < 5; ++i) monitor->enter("all_gather");
    const uint64_t k = monitor->enter("reduce_scatter");
    store_barrier(ctx.store(), "entered", ctx.world);
    const std::string error =
        "peer rank " + std::to_string((ctx.rank + 1) % ctx.world) + " closed the connection";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string message = fail_collective(*monitor, k, "reduce_scatter", error);
    EXPECT_EQ(message, error);  // unchanged: every rank was there
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1400ms) << "waited for reports it had";
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

TEST(CollectiveMonitor, ReportsRanksThatCalledAnotherCollective) {
  test::run_ranks(kWorld, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "desync");
    monitor->enter("all_reduce");
    // Rank 1 skipped a barrier that the others called: its collective 2 is a broadcast.
    const std::string op = ctx.rank == 1 ? "broadcast" : "barrier";
    const uint64_t k = monitor->enter(op);
    store_barrier(ctx.store(), "entered", ctx.world);
    const std::string message = fail_collective(*monitor, k, op, "mismatch");
    if (ctx.rank == 1) {
      for (int r : {0, 2, 3}) {
        EXPECT_TRUE(
            has(message, "rank " + std::to_string(r) + " called barrier as its " + "collective 2"))
            << message;
      }
    } else {
      EXPECT_TRUE(has(message,
                      "rank 1 called broadcast as its collective 2: the ranks called "
                      "different collectives"))
          << message;
    }
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

TEST(CollectiveMonitor, NamesARankThatFailedAtAnEarlierCollective) {
  test::run_ranks(kWorld, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "behind");
    const uint64_t first = monitor->enter("all_reduce");
    const uint64_t k = ctx.rank == 3 ? first : monitor->enter("all_reduce");
    store_barrier(ctx.store(), "entered", ctx.world);
    if (ctx.rank == 3) {
      fail_collective(*monitor, first, "all_reduce", "bad size");
    } else {
      const std::string message = fail_collective(*monitor, k, "all_reduce", "closed");
      EXPECT_TRUE(has(message,
                      "rank 3 had not reached it: its last collective of this group "
                      "is collective 1 (all_reduce), unfinished"))
          << message;
      EXPECT_FALSE(has(message, "frozen")) << message;
    }
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

TEST(CollectiveMonitor, RecordedEntriesSayWhereTheFrozenRankStopped) {
  test::run_ranks(kWorld, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "entries", /*record_entries=*/true);
    monitor->leave(monitor->enter("broadcast"));
    monitor->leave(monitor->enter("all_reduce"));
    // Every rank has finished collective 2 (and recorded it) before rank 2 enters 3.
    store_barrier(ctx.store(), "two done", ctx.world);
    if (ctx.rank == 1) {
      std::this_thread::sleep_for(2500ms);  // alive, never enters collective 3
    } else {
      const uint64_t k = monitor->enter("all_reduce");
      if (ctx.rank == 2) {
        freeze_rank_2_until_diagnosed(ctx);  // entered collective 3, then froze in it
      } else {
        wait_until_rank_2_is_frozen(ctx);
        const std::string message = fail_collective(*monitor, k, "all_reduce", "timed out");
        EXPECT_TRUE(has(message, "rank 2 is frozen or dead")) << message;
        EXPECT_TRUE(has(message, "rank 2 had entered collective 3 (all_reduce)")) << message;
        EXPECT_TRUE(has(message,
                        "rank 1 had not reached it: its last collective of this group "
                        "is collective 2 (all_reduce)"))
            << message;
      }
    }
    if (ctx.rank != 2) release_rank_2(ctx);
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

TEST(CollectiveMonitor, OnlyTheFirstFailureIsDiagnosed) {
  test::run_ranks(2, [](RankContext& ctx) {
    auto monitor = make_monitor(ctx, "first");
    if (ctx.rank == 0) {  // rank 1 never enters the barrier
      const uint64_t k = monitor->enter("barrier");
      EXPECT_TRUE(has(fail_collective(*monitor, k, "barrier", "first"), "rank 1 had not"));
      EXPECT_EQ(fail_collective(*monitor, k, "barrier", "second"), "second");
    }
    store_barrier(ctx.store(), "end", ctx.world);
  });
}

}  // namespace
}  // namespace course
