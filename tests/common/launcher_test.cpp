// launcher_test.cpp: tests of common/launcher.h and of the `launch` tool, with /bin/sh as
// the ranks.
//
// The central one: a rank killed with SIGKILL mid-run makes launch() return within seconds,
// naming the rank, and no process of the run (ranks, or their children) survives it.
// Run alone: ./build/<dir>/tests/common/test_common --gtest_filter='Launch*'
#include "launcher.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "env.h"
#include "error.h"
#include "flag_checks.h"
#include "handshake.h"

#ifndef COURSE_LAUNCH_BIN
#error "tests/common/CMakeLists.txt must define COURSE_LAUNCH_BIN (the path of tools/launch)"
#endif

namespace course {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

LaunchResult launch_sh(int np, const std::string& script, LaunchOptions options = {},
                       const std::string& arg0 = "rank") {
  options.nproc_per_node = np;
  return launch({"/bin/sh", "-c", script, arg0}, options);
}

/// A fresh directory for the ranks to leave files in.
fs::path scratch_dir() {
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() / ("course-launcher-test-" + std::to_string(::getpid()) +
                                              "-" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// Waits until every rank has written DIR/pid.RANK; returns the pids by rank.
std::vector<pid_t> wait_for_pids(const fs::path& dir, int np) {
  std::vector<pid_t> pids(np, 0);
  const auto give_up = Clock::now() + 10s;
  for (int r = 0; r < np; ++r) {
    while (pids[r] <= 0 && Clock::now() < give_up) {
      std::ifstream in(dir / ("pid." + std::to_string(r)));
      if (!(in >> pids[r])) std::this_thread::sleep_for(10ms);
    }
  }
  return pids;
}

/// Processes whose command line contains `marker` (read from /proc, no pgrep needed).
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos) found.push_back(std::stoi(name));
  }
  return found;
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

/// Runs a shell command; returns its exit status and fills `out` with its stdout.
int run_shell(const std::string& command, std::string& out) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buf[4096];
  size_t k;
  out.clear();
  while ((k = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, k);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(Launcher, AllRanksSucceedWithTheirEnvironment) {
  // Every check is the rank's exit status: a rank with a wrong variable fails the launch.
  const LaunchResult result = launch_sh(
      4,
      "test \"$RANK\" -lt 4 && test \"$WORLD_SIZE\" = 4 && test \"$LOCAL_RANK\" = \"$RANK\" && "
      "test \"$LOCAL_WORLD_SIZE\" = 4 && test \"$MASTER_ADDR\" = 127.0.0.1 && "
      "test \"$MASTER_PORT\" -gt 0 && test ${#COURSE_JOB_TOKEN} = 32 && "
      "test \"$OMP_NUM_THREADS\" = " +
          env_or("OMP_NUM_THREADS", "1") + " && test \"$OPENBLAS_NUM_THREADS\" = " +
          env_or("OPENBLAS_NUM_THREADS", "1") + " && test \"$OPENBLAS_CORETYPE\" = \"" +
          env_or("OPENBLAS_CORETYPE", blas_coretype_for_cpu()) + "\"");
  EXPECT_EQ(result.exit_code, 0) << result.failure;
  EXPECT_EQ(result.first_failed, -1);
  EXPECT_TRUE(result.failure.empty()) << result.failure;
  ASSERT_EQ(result.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(result.ranks[r].rank, r);
    EXPECT_EQ(result.ranks[r].exit_code, 0);
    EXPECT_EQ(result.ranks[r].signal, 0);
    EXPECT_FALSE(result.ranks[r].stopped_by_launcher);
  }
}

TEST(Launcher, RemembersEachRanksLastVerdictLine) {
  const LaunchResult result =
      launch_sh(2,
                "echo \"lesson99: PASS early $RANK\"; echo \"lesson99: FAIL rank $RANK differed\"; "
                "echo not a verdict; echo \"lessons: PASSED\"");
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[0].last_verdict, "lesson99: FAIL rank 0 differed");
  EXPECT_EQ(result.ranks[1].last_verdict, "lesson99: FAIL rank 1 differed");
}

TEST(Launcher, OneRankExitingThreeStopsTheOthers) {
  const auto t0 = Clock::now();
  const LaunchResult result = launch_sh(3, "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 30");
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.first_failed, 1);
  EXPECT_EQ(result.failure, "rank 1 exited with code 3");
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_EQ(result.ranks[1].exit_code, 3);
  EXPECT_FALSE(result.ranks[1].stopped_by_launcher);
  for (int r : {0, 2}) {
    EXPECT_TRUE(result.ranks[r].stopped_by_launcher) << "rank " << r;
    EXPECT_EQ(result.ranks[r].signal, SIGTERM) << "rank " << r;
  }
}

// The ring's out-of-step error on rank 0 is the cause; rank 1's closed connection, seen
// first, is its consequence: the verdict quotes rank 0.
TEST(Launcher, ReportsARanksOwnErrorOverTheConsequencesSeenFirst) {
  const LaunchResult result = launch_sh(
      3,
      "case $RANK in "
      "1) echo 'lesson99: FAIL connection closed by rank 0 after 0 of 8 bytes'; exit 1;; "
      "0) sleep 0.4; echo 'lesson99: FAIL segment 3 arrived, expected 2: out of step'; exit 1;; "
      "*) exec sleep 30;; esac");
  EXPECT_EQ(result.first_failed, 0) << result.failure;
  EXPECT_EQ(result.failure, "rank 0 exited with code 1");
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_FALSE(result.ranks[0].stopped_by_launcher);  // its last words were waited for
  EXPECT_TRUE(result.ranks[2].stopped_by_launcher);
}

TEST(Launcher, OfTwoOwnErrorsTheEarlierIsTheCause) {
  const LaunchResult result =
      launch_sh(2,
                "if [ $RANK = 0 ]; then sleep 0.4; echo 'lesson99: FAIL later'; exit 4; fi; "
                "sleep 0.1; echo 'lesson99: FAIL earlier'; exit 5");
  EXPECT_EQ(result.first_failed, 1) << result.failure;
  EXPECT_EQ(result.exit_code, 5);
}

// SIGSTOP freezes rank 1; rank 2 times out waiting for it. The report names rank 1.
TEST(Launcher, NamesAStoppedRankAndLeavesNothingBehind) {
  const fs::path dir = scratch_dir();
  const auto t0 = Clock::now();
  const LaunchResult result = launch_sh(
      3, "echo $$ > \"" + dir.string() +
             "/pid.$RANK\"; case $RANK in 1) kill -STOP $$;; "
             "2) sleep 0.3; echo 'lesson99: FAIL timed out after 1 s waiting for 8 bytes from "
             "rank 1'; exit 1;; *) exec sleep 30;; esac");
  EXPECT_LT(Clock::now() - t0, 8s);
  EXPECT_EQ(result.first_failed, 2);
  EXPECT_NE(result.failure.find("rank 1 was frozen (stopped by SIGSTOP"), std::string::npos)
      << result.failure;
  ASSERT_EQ(result.ranks.size(), 3u);
  EXPECT_TRUE(result.ranks[1].frozen);
  EXPECT_FALSE(result.ranks[0].frozen);
  const std::vector<pid_t> pids = wait_for_pids(dir, 3);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(alive(pids[r])) << "rank " << r << " survived";
  fs::remove_all(dir);
}

// When every rank still running is stopped, none has last words to give, nor acts on
// SIGTERM: the launcher kills them at once (it waited 2 s, then 2 s more, before).
TEST(Launcher, StoppedRanksAreKilledAtOnceWhenNoOtherIsLeft) {
  const fs::path dir = scratch_dir();
  const auto t0 = Clock::now();
  const LaunchResult result = launch_sh(
      3, "echo $$ > \"" + dir.string() +
             "/pid.$RANK\"; case $RANK in 0) sleep 0.5; echo 'lesson99: FAIL rank 1 and 2 are "
             "frozen'; exit 1;; *) kill -STOP $$;; esac");
  const auto took = Clock::now() - t0;
  EXPECT_LT(took, 2s) << std::chrono::duration<double>(took).count() << " s";
  EXPECT_EQ(result.first_failed, 0);
  EXPECT_NE(result.failure.find("ranks 1, 2 were frozen"), std::string::npos) << result.failure;
  const std::vector<pid_t> pids = wait_for_pids(dir, 3);
  for (int r = 0; r < 3; ++r) EXPECT_FALSE(alive(pids[r])) << "rank " << r << " survived";
  fs::remove_all(dir);
}

// A rank that spins (alive, not stopped, silent) is named by the peers that timed out on it.
TEST(Launcher, NamesTheSilentRankThatOthersTimedOutOn) {
  const LaunchResult result = launch_sh(
      3,
      "case $RANK in 0) sleep 0.2; echo 'lesson99: FAIL timed out after 1 s sending 64 bytes to "
      "rank 2 (0 sent)'; exit 1;; 1) sleep 0.3; echo 'lesson99: FAIL timed out after 1 s "
      "waiting for 8 bytes from rank 2'; exit 1;; *) exec sleep 30;; esac");
  EXPECT_EQ(result.first_failed, 0);
  EXPECT_EQ(result.failure,
            "rank 0 exited with code 1; rank 2 never answered: ranks 0, 1 timed out waiting for "
            "it");
}

// What the other ranks' collective monitors say when rank 0, which hosts the store, is gone.
const char* const kStoreGoneReport =
    "echo \"lesson99: FAIL rank $RANK: collective monitor: collective 1 (all_reduce) of group "
    "g failed here, and the store did not answer (connection refused): rank 0, which hosts "
    "it, is likely stopped, stuck or dead. The error here: connection closed by rank 0\"; "
    "exit 1";

TEST(Launcher, RankZerosSigkillBeatsTheReportsAboutIt) {
  const LaunchResult result = launch_sh(
      3, std::string("if [ \"$RANK\" = 0 ]; then sleep 0.2; kill -9 $$; fi; sleep 0.5; ") +
             kStoreGoneReport);
  EXPECT_EQ(result.first_failed, 0) << result.failure;
  EXPECT_EQ(result.failure, "rank 0 was killed by signal 9 (SIGKILL)");
}

// Even when the reports about it are printed before rank 0's own error.
TEST(Launcher, RankZerosOwnErrorBeatsTheReportsAboutIt) {
  const LaunchResult result = launch_sh(
      3, std::string("if [ \"$RANK\" = 0 ]; then sleep 0.4; echo 'lesson99: FAIL rank 0: cannot "
                     "open /missing.safetensors'; exit 1; fi; sleep 0.1; ") +
             kStoreGoneReport);
  EXPECT_EQ(result.first_failed, 0) << result.failure;
  EXPECT_EQ(result.ranks[0].last_verdict,
            "lesson99: FAIL rank 0: cannot open /missing.safetensors");
}

// Every rank misses the accuracy target: rank 0 is named, whichever printed first.
TEST(Launcher, RanksFailingAlikeNameRankZero) {
  const LaunchResult result = launch_sh(
      3, "sleep 0.$((3 - RANK)); echo 'lesson99: FAIL below the target of 88%: 12.00%'; exit 1");
  EXPECT_EQ(result.first_failed, 0) << result.failure;
  EXPECT_EQ(result.failure, "rank 0 exited with code 1");
}

// A usage error of the tool is one documented exit code, with a message in words.
TEST(Launcher, TheToolsUsageErrorsExit64) {
  std::string out;
  for (const char* flags : {"--np 0", "--node-rank -1", "--master-port 70000", "--no-such"}) {
    const int code = run_shell(std::string(COURSE_LAUNCH_BIN) + " " + flags + " -- true 2>&1", out);
    EXPECT_EQ(code, kUsageExitCode) << flags << ": " << out;
    EXPECT_NE(out.find("launch: usage: "), std::string::npos) << flags << ": " << out;
    EXPECT_LT(out.size(), 200u) << flags << ": " << out;
  }
}

TEST(Launcher, RanksIgnoringSigtermGetSigkillAfterTheGrace) {
  LaunchOptions options;
  options.grace_ms = 300;
  const auto t0 = Clock::now();
  const LaunchResult result = launch_sh(
      3, "trap '' TERM; if [ \"$RANK\" = 2 ]; then sleep 0.2; exit 1; fi; sleep 30", options);
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, 450ms);  // 0.2 s until rank 2 fails, then the 0.3 s grace
  EXPECT_LT(took, 5s);
  EXPECT_EQ(result.failure, "rank 2 exited with code 1");
  for (int r : {0, 1}) EXPECT_EQ(result.ranks[r].signal, SIGKILL) << "rank " << r;
}

TEST(Launcher, KillNineOfOneRankEndsTheRunAndLeavesNoProcess) {
  const fs::path dir = scratch_dir();
  const std::string marker = "course-kill9-marker-" + std::to_string(::getpid());
  // Each rank is a shell that records its pid and runs a child (sleep) of its own, so the
  // run has grandchildren that only the process-group kill can reach.
  LaunchResult result;
  std::thread run([&] {
    result =
        launch_sh(3, "echo $$ > \"" + dir.string() + "/pid.$RANK\"; sleep 60; exit 0", {}, marker);
  });
  const std::vector<pid_t> pids = wait_for_pids(dir, 3);
  for (pid_t pid : pids) ASSERT_GT(pid, 0) << "a rank never started";
  const pid_t group = ::getpgid(pids[0]);
  ASSERT_GT(group, 0);
  std::this_thread::sleep_for(50ms);  // let the shells start their sleeps

  const auto t0 = Clock::now();
  ASSERT_EQ(::kill(pids[1], SIGKILL), 0);
  run.join();
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_EQ(result.failure, "rank 1 was killed by signal 9 (SIGKILL)");
  EXPECT_EQ(result.first_failed, 1);
  EXPECT_EQ(result.exit_code, 128 + SIGKILL);

  for (int r = 0; r < 3; ++r) EXPECT_FALSE(alive(pids[r])) << "rank " << r << " survived";
  errno = 0;
  EXPECT_EQ(::kill(-group, 0), -1) << "a process of the run's group survived";
  EXPECT_EQ(errno, ESRCH);
  EXPECT_TRUE(processes_with(marker).empty());
  fs::remove_all(dir);
}

TEST(Launcher, ForwardsSigintToTheRanks) {
  const fs::path dir = scratch_dir();
  LaunchResult result;
  std::thread run([&] {
    result = launch_sh(2, "echo $$ > \"" + dir.string() + "/pid.$RANK\"; exec sleep 30");
  });
  wait_for_pids(dir, 2);  // the ranks run, so launch() has its signal handlers in place
  ::kill(::getpid(), SIGINT);
  run.join();
  EXPECT_EQ(result.exit_code, 128 + SIGINT);
  EXPECT_NE(result.failure.find("SIGINT"), std::string::npos) << result.failure;
  for (const RankExit& r : result.ranks) {
    EXPECT_EQ(r.signal, SIGINT) << "rank " << r.rank;
    EXPECT_TRUE(r.stopped_by_launcher);
  }
  fs::remove_all(dir);
}

TEST(Launcher, SeveralNodesGiveGlobalRanksAndAgreeOnTheToken) {
  LaunchOptions options;
  options.nnodes = 3;
  options.node_rank = 1;
  options.master_port = 29999;  // not bound by anyone: these ranks only read it
  const std::string token = derive_job_token("127.0.0.1", 29999);
  const LaunchResult result =
      launch_sh(2,
                "test \"$RANK\" = $((LOCAL_RANK + 2)) && test \"$WORLD_SIZE\" = 6 && "
                "test \"$LOCAL_WORLD_SIZE\" = 2 && test \"$MASTER_PORT\" = 29999 && "
                "test \"$COURSE_JOB_TOKEN\" = " +
                    token,
                options);
  EXPECT_EQ(result.exit_code, 0) << result.failure;
  ASSERT_EQ(result.ranks.size(), 2u);
  EXPECT_EQ(result.ranks[0].rank, 2);
  EXPECT_EQ(result.ranks[1].rank, 3);

  options.master_port = 0;
  EXPECT_THROW(launch_sh(1, "true", options), ConfigError);  // nodes must agree on a port
}

TEST(Launcher, AProgramThatCannotStartIsASystemError) {
  try {
    LaunchOptions options;
    options.nproc_per_node = 2;
    launch({"/nonexistent/course-program"}, options);
    FAIL() << "launch of a missing program returned";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/course-program"), std::string::npos)
        << e.what();
  }
}

TEST(Launcher, SelfExecutableIsThisTest) {
  EXPECT_TRUE(fs::exists(self_executable()));
  EXPECT_EQ(signal_name(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(random_job_token().size(), 32u);
  EXPECT_NE(random_job_token(), random_job_token());
}

// ---- the `launch` tool, as a learner runs it

TEST(LaunchTool, PrefixesEveryLineWithItsRank) {
  const fs::path dir = scratch_dir();
  std::string out;
  const int code = run_shell(std::string(COURSE_LAUNCH_BIN) +
                                 " --np 3 -- sh -c 'echo out $RANK; echo err $RANK >&2; "
                                 "printf \"no newline $RANK\"' 2>" +
                                 (dir / "stderr").string(),
                             out);
  EXPECT_EQ(code, 0);
  std::ifstream err_in(dir / "stderr");
  const std::string err((std::istreambuf_iterator<char>(err_in)), std::istreambuf_iterator<char>());
  for (int r = 0; r < 3; ++r) {
    const std::string R = std::to_string(r);
    EXPECT_NE(out.find("[rank " + R + "] out " + R + "\n"), std::string::npos) << out;
    EXPECT_NE(out.find("[rank " + R + "] no newline " + R + "\n"), std::string::npos) << out;
    EXPECT_NE(err.find("[rank " + R + "] err " + R + "\n"), std::string::npos) << err;
  }
  EXPECT_EQ(out.find("err"), std::string::npos) << "stderr lines belong on stderr";
  fs::remove_all(dir);
}

TEST(LaunchTool, LongLinesStayWhole) {
  // Two ranks each print one 200000-character line: each must come out in one piece.
  std::string out;
  const int code = run_shell(std::string(COURSE_LAUNCH_BIN) +
                                 " --np 2 -- sh -c 'head -c 200000 /dev/zero | tr \"\\0\" "
                                 "\"$RANK\"; echo'",
                             out);
  EXPECT_EQ(code, 0);
  for (int r = 0; r < 2; ++r) {
    const std::string line = "[rank " + std::to_string(r) + "] " +
                             std::string(200000, static_cast<char>('0' + r)) + "\n";
    EXPECT_NE(out.find(line), std::string::npos) << "rank " << r << "'s line was split";
  }
}

TEST(LaunchTool, NoPrefixPrintsTheRawOutput) {
  std::string out;
  run_shell(std::string(COURSE_LAUNCH_BIN) + " --np 1 --no-prefix -- echo plain", out);
  EXPECT_EQ(out, "plain\n");
}

TEST(LaunchTool, ExitsWithTheFailingRanksCodeAndNamesIt) {
  std::string out;
  const auto t0 = Clock::now();
  const int code = run_shell(std::string(COURSE_LAUNCH_BIN) +
                                 " --np 3 -- sh -c 'if [ $RANK = 2 ]; then kill -9 $$; fi; "
                                 "exec sleep 30' 2>&1",
                             out);
  EXPECT_LT(Clock::now() - t0, 5s);
  EXPECT_EQ(code, 128 + SIGKILL);
  EXPECT_NE(out.find("launch: rank 2 was killed by signal 9 (SIGKILL)"), std::string::npos) << out;
}

}  // namespace
}  // namespace course
