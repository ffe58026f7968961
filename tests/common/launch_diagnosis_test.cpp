// Tests of which failure the launcher reports (common/runtime/launch_diagnosis.h).
#include "launch_diagnosis.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace course {
namespace {

RankObservation failed(int rank, uint64_t order, std::string verdict) {
  RankObservation r;
  r.rank = rank;
  r.failed = true;
  r.ended_on_its_own = true;
  r.order = order;
  r.verdict = std::move(verdict);
  return r;
}

TEST(LaunchDiagnosis, ACollectiveMonitorsReportBeatsEarlierErrorsAndConsequences) {
  const std::vector<RankObservation> ranks = {
      failed(0, 1, "lesson05: FAIL rank 0: connection closed by rank 3 after 0 of 16 bytes"),
      failed(1, 2, "lesson05: FAIL rank 1: timed out after 20 s waiting for 16 bytes from rank 2"),
      failed(3, 3,
             "lesson05: FAIL rank 3: collective monitor: collective 9 (all_reduce) of group "
             "tcp/pg failed here; rank 2 is frozen or dead. The error here: connection closed "
             "by rank 0"),
  };
  EXPECT_EQ(pick_cause(ranks), 2);
  EXPECT_TRUE(is_collective_report(ranks[2].verdict));
  EXPECT_FALSE(is_collective_report(ranks[1].verdict));
}

TEST(LaunchDiagnosis, WithoutAReportARanksOwnErrorBeatsAConsequence) {
  const std::vector<RankObservation> ranks = {
      failed(0, 1, "lesson05: FAIL rank 0: connection closed by rank 3 after 0 of 16 bytes"),
      failed(1, 2, "lesson05: FAIL rank 1: timed out after 20 s waiting for 16 bytes from rank 2"),
  };
  EXPECT_EQ(pick_cause(ranks), 1);
}

RankObservation killed(int rank, uint64_t order, int signal) {
  RankObservation r = failed(rank, order, "");
  r.signal = signal;
  return r;
}

const char* const kStoreGone =
    "lesson11: FAIL rank %d: collective monitor: collective 3 (broadcast) of group "
    "tcp/lesson11 failed here, and the store did not answer (connection closed by "
    "127.0.0.1:4000): rank 0, which hosts it, is likely stopped, stuck or dead. The error "
    "here: connection closed by rank 0 after 0 of 8 bytes";

std::string store_gone(int rank) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), kStoreGone, rank);
  return buf;
}

TEST(LaunchDiagnosis, ReadsTheRanksAReportNames) {
  EXPECT_EQ(ranks_named_by_report(store_gone(2)), std::vector<int>{0});
  EXPECT_EQ(ranks_named_by_report(
                "lesson05: FAIL rank 3: collective monitor: collective 9 (all_reduce) of group "
                "tcp/pg failed here; ranks 1, 12 are frozen or dead: no answer; rank 2 had "
                "passed it. The error here: connection closed by rank 7"),
            (std::vector<int>{1, 2, 12}));
  EXPECT_TRUE(ranks_named_by_report("lesson05: FAIL rank 3: timed out from rank 2").empty());
}

// Rank 0 fails first with a clear error (a missing --init file); the store it hosted goes
// with it, and the others' monitors report that the store did not answer.
TEST(LaunchDiagnosis, RankZerosOwnErrorBeatsTheReportsAboutIt) {
  const std::vector<RankObservation> ranks = {
      failed(0, 3, "lesson11: FAIL rank 0: cannot open /nonexistent.safetensors"),
      failed(1, 1, store_gone(1)),
      failed(2, 2, store_gone(2)),
  };
  EXPECT_EQ(pick_cause(ranks), 0);
}

TEST(LaunchDiagnosis, RankZeroFailingFirstWithAClearErrorIsTheCause) {
  const std::vector<RankObservation> ranks = {
      failed(0, 1, "lesson11: FAIL rank 0: --data /nonexistent: no such directory"),
      failed(1, 2,
             "lesson11: FAIL rank 1: collective monitor: collective 2 (barrier) of group "
             "tcp/lesson11 failed here; rank 2 had not reached it. The error here: x"),
  };
  EXPECT_EQ(pick_cause(ranks), 0);
}

// Rank 0 killed by SIGKILL prints nothing: its death, seen last, still beats the reports.
TEST(LaunchDiagnosis, ASignalDeathBeatsTheReportsAboutIt) {
  std::vector<RankObservation> ranks = {
      killed(0, (1ull << 40) + 1, 9),
      failed(1, 1, store_gone(1)),
      failed(2, 2, store_gone(2)),
  };
  EXPECT_EQ(pick_cause(ranks), 0);
  // A report about another rank still wins over a death it does not name.
  ranks[0].rank = 3;
  EXPECT_EQ(pick_cause(ranks), 1);
}

TEST(LaunchDiagnosis, RanksFailingAlikeNameTheLowest) {
  const std::string target = "lesson11: FAIL below the target of 88%: 10.00% test accuracy";
  EXPECT_EQ(pick_cause({failed(0, 3, target), failed(1, 1, target), failed(2, 2, target)}), 0);
  EXPECT_EQ(pick_cause({failed(0, 2, "lesson09: FAIL rank 0 (pid 11 on a): loss nan on rank 0"),
                        failed(1, 1, "lesson09: FAIL rank 1 (pid 12 on a): loss nan on rank 1"),
                        failed(2, 3, "lesson09: FAIL rank 2 (pid 13 on a): loss inf on rank 2")}),
            0);
  // One problem agreed across ranks, the same text on every rank: the rank it names,
  // whose check failed (not rank 1, which differs from rank 0's text only once rank 0's
  // own number is blanked).
  const std::string agreed = "lesson09: FAIL self-check: all_reduce: element 0 on rank 2 is 5";
  EXPECT_EQ(pick_cause({failed(0, 4, agreed), failed(1, 2, agreed), failed(2, 3, agreed),
                        failed(3, 1, agreed)}),
            2);
  const std::string on_rank0 = "lesson09: FAIL self-check: all_reduce: element 0 on rank 0 is 5";
  EXPECT_EQ(pick_cause({failed(1, 1, on_rank0), failed(0, 3, on_rank0), failed(3, 2, on_rank0)}),
            1);
  // It names a rank that did not fail with it, or two ranks: the lowest.
  const std::string two = "lesson09: FAIL self-check: rank 1 and rank 2 disagree";
  EXPECT_EQ(pick_cause({failed(2, 1, two), failed(1, 2, two), failed(0, 3, two)}), 2);
  // Different errors: the earliest, not the lowest.
  EXPECT_EQ(pick_cause({failed(0, 2, "lesson09: FAIL rank 0: bad"),
                        failed(1, 1, "lesson09: FAIL rank 1: worse")}),
            1);
}

}  // namespace
}  // namespace course
