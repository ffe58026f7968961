// Tests of which failure the launcher reports (common/runtime/launch_diagnosis.h).
#include "launch_diagnosis.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace course
