// harness.cpp: run a test body on N forked ranks and report every failing rank (harness.h).
//
// The parent and its ranks:
//
//   test process ──fork──> rank 0: StoreServer + StoreClient, body, waits for "release"
//                ──fork──> rank 1: StoreClient, body
//                ──fork──> ...
//
// Every rank joins one process group (led by rank 0) and dies with the test process
// (child_group.h, shared with the launcher), and ends with _exit(): a fork never returns
// into GoogleTest. Just
// before _exit a rank writes one record into its own pipe: its exit code (one digit) and a
// message. A rank that exits without a record left its body early (exit() or a crash).
// Rank 0 hosts the store, so it lingers after its body until the parent closes the release
// pipe, which happens once every other rank has exited.
//
// Exits are observed without reaping (ChildGroup::exited) and reaped only at the end, so the
// group id stays valid (and cannot be reused) for as long as the parent may still signal it.
//
// What this is not: a thread-based harness; ranks share nothing but sockets and the store.
#include "harness.h"

#include <fcntl.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "activity.h"
#include "child_group.h"
#include "env.h"
#include "error.h"
#include "launcher.h"
#include "socket.h"

namespace course::test {
namespace {

using Clock = std::chrono::steady_clock;

/// Bytes of shared memory per rank for "what is it blocked in" (activity.h).
constexpr size_t kActivitySlot = 256;

/// How long the others may go on after one rank failed, before they are killed: long
/// enough for a failed collective's diagnosis (kCollectiveMonitorGrace, 1.5 s), so that
/// the others end with their own errors rather than the harness's kill.
constexpr auto kGrace = std::chrono::seconds(3);
/// The longest message a rank sends back (it must fit the pipe, read only after the exit).
constexpr size_t kMaxMessage = 16 * 1024;

std::string describe(std::chrono::milliseconds t) {
  if (t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + " s";
  return std::to_string(t.count()) + " ms";
}

/// In a rank: runs the body and _exits with 0 passed, 1 assertion failed, 2 exception.
/// The rank's assertions go to reporters of its own, not to the test it was forked from
/// (whose result nobody reads): that is how we count them whatever the parent was doing,
/// even inside EXPECT_NONFATAL_FAILURE, and how their text reaches the parent's report.
/// One reporter takes this thread's assertions (it overrides any the parent installed for
/// its thread), the other those of threads the body starts.
[[noreturn]] void rank_main(RankContext& ctx, const std::function<void(RankContext&)>& body,
                            Millis timeout, int record_fd, int release_fd) {
  using Reporter = ::testing::ScopedFakeTestPartResultReporter;
  set_process_rank(ctx.rank);
  int code = 0;
  std::string message;
  ::testing::TestPartResultArray failures[2];
  // Rank 0's store outlives a failed body until the record below is written: the others
  // see it close only as rank 0 exits, so the harness never stops rank 0 (after another
  // rank's "connection closed by the store") before rank 0 has said why it failed.
  std::unique_ptr<StoreServer> server;
  {
    Reporter other_threads(Reporter::INTERCEPT_ALL_THREADS, &failures[1]);
    Reporter this_thread(Reporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures[0]);
    try {
      if (ctx.rank == 0) {
        server = std::make_unique<StoreServer>("127.0.0.1", ctx.master_port, ctx.token);
      }
      ctx.store_ = std::make_unique<StoreClient>(ctx.master_addr, ctx.master_port, ctx.rank,
                                                 ctx.token, timeout);
      body(ctx);
      ctx.store_.reset();
      if (server) {
        char byte;  // keep the store up until the parent says every other rank is done
        while (::read(release_fd, &byte, 1) < 0 && errno == EINTR) {
        }
      }
    } catch (...) {
      code = 2;
      message = exception_message(std::current_exception());
    }
  }
  for (const auto& array : failures) {
    for (int i = 0; i < array.size(); ++i) {
      const ::testing::TestPartResult& part = array.GetTestPartResult(i);
      if (!part.failed()) continue;
      const std::string where = std::string(part.file_name() ? part.file_name() : "?") + ":" +
                                std::to_string(part.line_number());
      std::printf("[rank %d] %s: Failure\n%s\n", ctx.rank, where.c_str(), part.message());
      if (code == 0) code = 1;
      if (code == 1) message += where + ": " + part.message() + "\n";
    }
  }
  // The record: | exit code as one digit | message |
  const std::string record = std::to_string(code) + message.substr(0, kMaxMessage);
  (void)!::write(record_fd, record.data(), record.size());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

struct Rank {
  pid_t pid = -1;
  int record_fd = -1;
  bool exited = false;
  bool stopped = false;  // killed by the harness because another rank failed first
  RankOutcome outcome;
};

/// Fills r.outcome from the exit status and the record the rank left in its pipe.
void read_outcome(Rank& r, const siginfo_t& info) {
  if (info.si_code != CLD_EXITED) {
    r.outcome.signal = info.si_status;
    if (r.outcome.message.empty()) {
      r.outcome.message = "was killed by signal " + std::to_string(info.si_status) + " (" +
                          signal_name(info.si_status) + ")";
    }
    return;
  }
  char buf[kMaxMessage + 16];
  ssize_t got = 0, k;
  while ((k = ::read(r.record_fd, buf + got, sizeof(buf) - got)) > 0) got += k;
  if (got > 0 && buf[0] >= '0' && buf[0] <= '2') {
    r.outcome.exit_code = buf[0] - '0';
    r.outcome.message.assign(buf + 1, static_cast<size_t>(got - 1));
    if (info.si_status != r.outcome.exit_code) {
      // The body was done, yet the exit status changed on the way out: a sanitizer
      // (ThreadSanitizer exits 66 after a report) or an atexit handler had its say.
      r.outcome.exit_code = 3;
      r.outcome.message = "exited with code " + std::to_string(info.si_status) +
                          " after its body returned (a sanitizer report? see the rank's "
                          "output above)";
    }
  } else {
    r.outcome.exit_code = 3;
    r.outcome.message = "exited with code " + std::to_string(info.si_status) +
                        " before its body returned (exit() inside the test body?)";
  }
}

/// True when the rank ended on a stub's COURSE_TODO (NotImplementedError).
bool hit_todo(const RankOutcome& o) {
  return o.exit_code == 2 && o.message.find("not implemented: ") != std::string::npos;
}

struct Run {
  std::vector<Rank> ranks;
};

Run run(int world, const std::function<void(RankContext&)>& body, const RanksOptions& options) {
  Run run;
  run.ranks.resize(world);
  const std::string token = "test-" + random_job_token();
  // Held until every rank is reaped: no other test's client can be handed this port as
  // its ephemeral port before rank 0 binds it.
  const PortReservation reserved("127.0.0.1");
  const int port = reserved.port();
  int release[2];
  COURSE_CHECK_SYS(::pipe2(release, O_CLOEXEC), "pipe2() for the harness");
  // One slot per rank, shared with the forks: each rank publishes what it is blocked in,
  // so a timeout can say "rank 2 was still in recv from rank 1".
  const size_t activity_bytes = kActivitySlot * static_cast<size_t>(world);
  void* mapped =
      ::mmap(nullptr, activity_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw_system_error("mmap() for the harness's activity slots");
  char* activity = static_cast<char*>(mapped);
  std::memset(activity, 0, activity_bytes);

  std::cout.flush();  // or the forks would print the parent's buffered output again
  std::cerr.flush();
  std::fflush(nullptr);
  ChildGroup group;  // reaps every rank, whatever throws below
  for (int r = 0; r < world; ++r) {
    int record[2];
    COURSE_CHECK_SYS(::pipe2(record, O_CLOEXEC | O_NONBLOCK), "pipe2() for the harness");
    const pid_t pid = group.spawn([&] {
      ::close(record[0]);
      ::close(release[1]);
      activity_attach(activity + kActivitySlot * r, kActivitySlot);
      RankContext ctx;
      ctx.rank = r;
      ctx.world = world;
      ctx.master_port = port;
      ctx.token = token;
      rank_main(ctx, body, options.timeout, record[1], release[0]);
    });
    ::close(record[1]);
    if (pid < 0) {
      ::close(record[0]);
      for (Rank& done : run.ranks) {
        if (done.pid > 0) ::close(done.record_fd);
      }
      throw_system_error("fork() for rank " + std::to_string(r));
    }
    run.ranks[r].pid = pid;
    run.ranks[r].record_fd = record[0];
  }
  ::close(release[0]);

  const auto deadline = Clock::now() + options.timeout;
  auto kill_at = Clock::time_point::max();
  int running = world;
  int failed_first = -1;
  bool killed_all = false;  // after the SIGKILL to the group, only exits remain to be seen
  while (running > 0) {
    for (int r = 0; r < world; ++r) {
      Rank& rank = run.ranks[r];
      if (rank.exited) continue;
      const std::optional<siginfo_t> info = ChildGroup::exited(rank.pid);
      if (!info) continue;
      rank.exited = true;
      --running;
      read_outcome(rank, *info);
      const RankOutcome& o = rank.outcome;
      const bool failed = o.signal != 0 || o.exit_code == 1 || o.exit_code == 3 ||
                          (o.exit_code == 2 && options.exceptions_fail);
      if ((failed || hit_todo(o)) && !killed_all && !rank.stopped && failed_first < 0) {
        failed_first = r;
        kill_at = Clock::now() + kGrace;
        for (Rank& other : run.ranks) other.stopped = !other.exited;
      }
      // A stub's TODO is the whole story, even when a peer's broken connection was seen
      // first: what the others would go on to report is only that a peer stopped
      // answering, so they are stopped now, without the grace.
      if (hit_todo(o)) kill_at = std::min(kill_at, Clock::now());
    }
    // Rank 0 holds the store: release it once every other rank is gone.
    bool others_done = true;
    for (int r = 1; r < world; ++r) others_done = others_done && run.ranks[r].exited;
    if (others_done && release[1] >= 0) ::close(release[1]), release[1] = -1;

    const auto now = Clock::now();
    if (running > 0 && !killed_all && (now >= kill_at || now >= deadline)) {
      for (int r = 0; r < world; ++r) {
        Rank& rank = run.ranks[r];
        if (rank.exited) continue;
        if (now >= deadline && !rank.stopped) {
          rank.outcome.timed_out = true;
          const std::string doing = activity_read(activity + kActivitySlot * r, kActivitySlot);
          rank.outcome.message =
              "timed out after " + describe(options.timeout) + "; rank " + std::to_string(r) +
              " was still " +
              (doing.empty() ? "running (not blocked in a socket call)" : "in " + doing);
        } else {
          rank.outcome.message = "stopped after rank " + std::to_string(failed_first) + " failed";
        }
      }
      group.signal_all(SIGKILL);
      killed_all = true;
    }
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }

  // Every rank has exited. Kill anything a rank left behind in the group, then reap.
  group.reap();
  if (release[1] >= 0) ::close(release[1]);
  for (Rank& rank : run.ranks) ::close(rank.record_fd);
  ::munmap(mapped, activity_bytes);
  return run;
}

}  // namespace

std::chrono::milliseconds default_ranks_timeout() {
  const std::string text = env_or("COURSE_TEST_TIMEOUT_S", "");
  if (!text.empty()) {
    char* end = nullptr;
    const double seconds = std::strtod(text.c_str(), &end);
    if (end != text.c_str() && *end == '\0' && seconds > 0) {
      return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    }
  }
  return std::chrono::seconds(60);
}

std::vector<RankOutcome> run_ranks_collect(int world, const std::function<void(RankContext&)>& body,
                                           const RanksOptions& options) {
  std::vector<RankOutcome> outcomes;
  for (Rank& rank : run(world, body, options).ranks) outcomes.push_back(rank.outcome);
  return outcomes;
}

void run_ranks(int world, const std::function<void(RankContext&)>& body,
               const RanksOptions& options) {
  const Run result = run(world, body, options);
  bool any_todo = false;
  for (const Rank& rank : result.ranks) any_todo = any_todo || hit_todo(rank.outcome);
  for (int r = 0; r < world; ++r) {
    const Rank& rank = result.ranks[r];
    const RankOutcome& o = rank.outcome;
    // A rank stopped after another failed is a consequence, not a cause, unless it hit a
    // stub, crashed or exited on its own: when rank 0 does, the store closes, and rank 4's
    // broken connection may be seen first. (SIGKILL is the harness stopping it.) And once
    // a rank is at a stub's TODO, that is the whole story: the others' errors (a peer that
    // stopped answering) are left out, whichever ended first.
    const bool todo = hit_todo(o);
    const bool own_end = (o.signal != 0 && o.signal != SIGKILL) || o.exit_code == 3;
    if ((rank.stopped || any_todo) && !o.timed_out && !todo && !own_end) continue;
    const std::string who = "rank " + std::to_string(r) + " of " + std::to_string(world);
    if (o.timed_out) {
      ADD_FAILURE() << who << ": " << o.message
                    << " (is it waiting for a rank that never comes, or for itself?)";
    } else if (o.signal != 0) {
      ADD_FAILURE() << who << " " << o.message;
    } else if (o.exit_code == 1) {
      ADD_FAILURE() << who << " failed an assertion:\n" << o.message;
    } else if (o.exit_code == 2 && options.exceptions_fail) {
      ADD_FAILURE() << who << " threw: " << o.message;
    } else if (o.exit_code == 3) {
      ADD_FAILURE() << who << " " << o.message;
    }
  }
}

}  // namespace course::test
