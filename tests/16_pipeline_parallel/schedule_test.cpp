// schedule_test.cpp: lesson 16: schedules as data. GPipe and 1F1B against their closed
// forms (action counts, 1F1B's warm-up of P-1-s forwards, the micro-batches in flight),
// and check_schedule refusing schedules that deadlock or whose messages do not pair up,
// naming the stage and the micro-batch; one stage's executor against one process. One
// process, no messages.
//
//   ./build/solutions/test_16 --gtest_filter='Schedule*'
#include "schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../collectives/group_factory.h"
#include "error.h"
#include "harness.h"
#include "pp_self_check.h"
#include "rng.h"
#include "sequential.h"
#include "stage_module.h"
#include "tensor_ops.h"

namespace course::test {
namespace {

int count_kind(const StageSchedule& actions, ActionKind kind) {
  return static_cast<int>(std::count_if(actions.begin(), actions.end(),
                                        [&](const Action& a) { return a.kind == kind; }));
}

std::string error_of(const PipelineSchedule& s, int micro_batches) {
  try {
    check_schedule(s, micro_batches);
  } catch (const ScheduleError& e) {
    return e.detail();
  }
  return "";
}

TEST(Schedule, GpipeRunsEveryForwardThenEveryBackward) {
  const PipelineSchedule s = build_gpipe(3, 4);
  ASSERT_EQ(s.size(), 3u);
  // Each receive is posted one compute before the compute that needs it.
  EXPECT_EQ(describe_stage(s[0]),
            "F0 SEND_F0 F1 SEND_F1 F2 SEND_F2 RECV_B0 F3 SEND_F3 RECV_B1 B0 RECV_B2 B1 RECV_B3 B2 "
            "B3");
  EXPECT_EQ(describe_stage(s[2]),
            "RECV_F0 RECV_F1 F0 RECV_F2 F1 RECV_F3 F2 F3 B0 SEND_B0 B1 SEND_B1 B2 SEND_B2 B3 "
            "SEND_B3");
  EXPECT_EQ(max_in_flight(s[1]), 4);
}

TEST(Schedule, OneFOneBWarmsUpWithPMinusOneMinusSForwardsThenAlternates) {
  for (int stages : {1, 2, 3, 4, 5}) {
    for (int m : {1, 2, 3, 4, 8}) {
      SCOPED_TRACE("P = " + std::to_string(stages) + ", M = " + std::to_string(m));
      const PipelineSchedule s = build_1f1b(stages, m);
      ASSERT_EQ(static_cast<int>(s.size()), stages);
      for (int st = 0; st < stages; ++st) {
        SCOPED_TRACE("stage " + std::to_string(st) + ": " + describe_stage(s[st]));
        const StageSchedule& a = s[st];
        // Counts: every micro-batch's F and B; messages with each neighbour there is.
        EXPECT_EQ(count_kind(a, ActionKind::forward), m);
        EXPECT_EQ(count_kind(a, ActionKind::backward), m);
        EXPECT_EQ(count_kind(a, ActionKind::send_f), st < stages - 1 ? m : 0);
        EXPECT_EQ(count_kind(a, ActionKind::recv_b), st < stages - 1 ? m : 0);
        EXPECT_EQ(count_kind(a, ActionKind::recv_f), st > 0 ? m : 0);
        EXPECT_EQ(count_kind(a, ActionKind::send_b), st > 0 ? m : 0);
        // The order of computes: warm-up forwards, then F/B pairs, then backwards.
        std::vector<Action> computes;
        for (const Action& x : a) {
          if (x.kind == ActionKind::forward || x.kind == ActionKind::backward)
            computes.push_back(x);
        }
        const int warmup = std::min(stages - 1 - st, m);
        size_t i = 0;
        for (int f = 0; f < warmup; ++f, ++i) {
          EXPECT_EQ(computes[i], (Action{ActionKind::forward, f})) << "warm-up " << f;
        }
        int b = 0;
        for (int f = warmup; f < m; ++f) {
          EXPECT_EQ(computes[i++], (Action{ActionKind::forward, f}));
          EXPECT_EQ(computes[i++], (Action{ActionKind::backward, b++}));
        }
        for (; b < m; ++b) EXPECT_EQ(computes[i++], (Action{ActionKind::backward, b}));
      }
    }
  }
}

TEST(Schedule, OneFOneBHoldsAtMostPMinusSMicroBatchesAndGpipeAllOfThem) {
  for (int stages : {2, 4}) {
    for (int m : {1, 4, 16}) {
      const PipelineSchedule one = build_1f1b(stages, m);
      const PipelineSchedule gpipe = build_gpipe(stages, m);
      for (int st = 0; st < stages; ++st) {
        EXPECT_EQ(max_in_flight(one[st]), std::min(stages - st, m)) << "1f1b stage " << st;
        EXPECT_EQ(max_in_flight(gpipe[st]), m) << "gpipe stage " << st;
      }
    }
  }
}

TEST(ScheduleCheck, AcceptsGpipeAndOneFOneB) {
  for (int stages : {1, 2, 3, 4, 6}) {
    for (int m : {1, 2, 5, 8}) {
      EXPECT_EQ(error_of(build_gpipe(stages, m), m), "") << stages << " stages, " << m;
      EXPECT_EQ(error_of(build_1f1b(stages, m), m), "") << stages << " stages, " << m;
    }
  }
}

TEST(ScheduleCheck, RefusesADeadlockNamingTheStageAndTheMicroBatch) {
  const std::string what = error_of(deadlocking_schedule(), 2);
  // Every stuck stage is named, with the micro-batch it waits for and from whom, in the
  // clauses of schedule.h's contract, as the driver's self-check looks for them.
  EXPECT_NE(what.find("deadlock: "), std::string::npos) << what;
  EXPECT_NE(what.find("stage 1 waits in F1 for micro-batch 1's activation from stage 0, which "
                      "never sends SEND_F1"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("stage 0 waits in B0 for micro-batch 0's gradient from stage 1, which "
                      "never sends SEND_B0"),
            std::string::npos)
      << what;
  // A larger one: 1F1B on stages 0 and 1, GPipe's order on the last of 3 stages. Stage 1
  // waits in B0 for a gradient stage 2 sends only after F2, which waits for stage 1.
  PipelineSchedule mixed = build_1f1b(3, 4);
  mixed[2] = build_gpipe(3, 4)[2];
  const std::string mixed_what = error_of(mixed, 4);
  EXPECT_NE(mixed_what.find("stage 1 waits in B0"), std::string::npos) << mixed_what;
  EXPECT_NE(mixed_what.find("stage 2 waits in F2 for micro-batch 2's activation from stage 1"),
            std::string::npos)
      << mixed_what;
  // The driver's own broken 1F1B: the warm-up counted from the wrong end, min(s, M).
  const std::string reversed = error_of(reversed_warmup_1f1b(), 4);
  EXPECT_NE(reversed.find("stage 0 waits in B0 for micro-batch 0's gradient from stage 1, which "
                          "never sends SEND_B0"),
            std::string::npos)
      << reversed;
  EXPECT_NE(reversed.find("stage 1 waits in F1 for micro-batch 1's activation from stage 0, "
                          "which never sends SEND_F1"),
            std::string::npos)
      << reversed;
}

TEST(ScheduleCheck, RefusesMessagesReceivedInAnotherOrderThanSent) {
  PipelineSchedule swapped = build_gpipe(2, 3);
  std::swap(swapped[1][0], swapped[1][1]);  // RECV_F1 before RECV_F0 on stage 1
  const std::string what = error_of(swapped, 3);
  EXPECT_NE(what.find("unmatched message: "), std::string::npos) << what;
  EXPECT_NE(what.find("stage 0"), std::string::npos) << what;
  EXPECT_NE(what.find("RECV_F1"), std::string::npos) << what;
  PipelineSchedule missing = build_gpipe(2, 2);
  missing[1].erase(std::find(missing[1].begin(), missing[1].end(), Action{ActionKind::send_b, 1}));
  EXPECT_NE(error_of(missing, 2).find("SEND_B1"), std::string::npos) << error_of(missing, 2);
}

// One stage holding the whole model: no messages, so what is left is each action's own
// work. A loss scaled by 1/M not at all or twice, a backward that starts from another
// micro-batch's output and a last stage that keeps its logits instead of the loss are
// named by their cause (check_one_stage_step and the executor's checks).
TEST(Executor, OneStageEqualsOneProcessWithTheLossScaledByOneOverMOnce) {
  run_ranks(1, [](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    EXPECT_EQ(check_one_stage_step(*group), "");
  });
}

TEST(Partition, CutsContiguousStagesWithTheSmallestLargestStage) {
  EXPECT_EQ(partition_layers({1, 1, 1, 1}, 2), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(partition_layers({5, 1, 1, 1, 1, 1}, 2), (std::vector<int>{0, 1, 6}));
  EXPECT_EQ(partition_layers({3, 3, 3}, 3), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_THROW(partition_layers({1, 1}, 3), ConfigError);
}

TEST(Partition, StagesHoldTheSlicesOfOneInitialisation) {
  const std::vector<int64_t> sizes = {12, 10, 9, 8, 7};
  StageModule a(sizes, 4, 0, 2);
  StageModule b(sizes, 4, 2, 4);
  Rng rng(4);
  const auto whole = make_mlp(sizes, rng);
  const auto all = whole->named_parameters();
  auto pa = a.named_parameters();
  const auto pb = b.named_parameters();
  pa.insert(pa.end(), pb.begin(), pb.end());
  ASSERT_EQ(pa.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(pa[i].first, all[i].first);
    EXPECT_EQ(max_abs_diff(pa[i].second.data(), all[i].second.data()), 0.0f) << all[i].first;
  }
  EXPECT_TRUE(b.ends_model());
  EXPECT_FALSE(a.ends_model());
}

}  // namespace
}  // namespace course::test
