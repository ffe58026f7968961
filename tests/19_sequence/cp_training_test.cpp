// cp_training_test.cpp: lesson 19, given: the GPT trained on a dp x cp x tp mesh
// (cp_training.h) ends at one process's parameters, for every layout, both attentions, tp
// with and without sequence parallelism, and on tcp and gloo; the flag checks name the
// numbers at fault.
//
//   ./build/solutions/test_19 --gtest_filter='CpTraining*'
#include "cp_training.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../collectives/group_factory.h"
#include "../support/tiny_fortunes.h"
#include "cp_bench.h"
#include "device_mesh.h"
#include "harness.h"
#include "text_corpus.h"

namespace course::test {
namespace {

CpTrainingOptions tiny_options(int cp, const std::string& attention, const std::string& layout) {
  CpTrainingOptions o;
  o.steps = 3;
  o.seq_len = 16;
  o.batch_size = 4;
  o.layers = 2;
  o.heads = 4;
  o.hidden = 16;
  o.lr = 1e-2;
  o.eval_every = 0;
  o.eval_batches = 1;
  o.sample = 0;
  o.cp = cp;
  o.cp_attention = attention;
  o.layout = layout;
  return o;
}

void expect_equivalent(const std::string& backend, int world, int cp, const std::string& attention,
                       const std::string& layout, int tp = 1, const std::string& sp = "on") {
  run_ranks(world, [&](RankContext& ctx) {
    auto all = make_group(backend, ctx);
    Subgroups subgroups = make_subgroups(backend, ctx);
    const DeviceMesh mesh = init_cp_mesh(subgroups, cp, tp);
    const TextSplit text{tiny_fortunes(120, 0), tiny_fortunes(12, 3), 120, 12};
    CpTrainingOptions o = tiny_options(cp, attention, layout);
    o.tp = tp;
    o.sequence_parallel = sp;
    ASSERT_EQ(check_cp_training_flags(o, world), "");
    const double grad_diff = cp_gradient_difference(o, text, mesh, *all);
    EXPECT_LT(grad_diff, 2e-5) << backend << ", " << world << " ranks, cp " << cp << ", tp " << tp
                               << " (SP " << sp << "): the first step's gradients";
    const double diff = cp_equivalence_difference(o, text, mesh, *all);
    EXPECT_LT(diff, 2e-4) << backend << ", " << world << " ranks, cp " << cp << ", tp " << tp
                          << " (SP " << sp << "), " << attention << ", " << layout;
    EXPECT_GT(diff, 0.0) << "a difference of exactly 0 means the cp path did not run";
  });
}

TEST(CpTraining, RingOnEveryMeshEndsAtOneProcessesParameters) {
  for (const char* layout : {"zigzag", "contiguous"}) {
    expect_equivalent("tcp", 2, 2, "ring", layout);  // dp 1 x cp 2
    expect_equivalent("tcp", 4, 2, "ring", layout);  // dp 2 x cp 2
    expect_equivalent("tcp", 4, 4, "ring", layout);  // dp 1 x cp 4
  }
}

TEST(CpTraining, UlyssesOnEveryMeshEndsAtOneProcessesParameters) {
  expect_equivalent("tcp", 2, 2, "ulysses", "zigzag");
  expect_equivalent("tcp", 4, 2, "ulysses", "contiguous");
  expect_equivalent("tcp", 4, 4, "ulysses", "zigzag");
}

TEST(CpTraining, TpOverHeadsWithAndWithoutSpEndsAtOneProcessesParameters) {
  expect_equivalent("tcp", 2, 1, "ring", "zigzag", 2, "on");         // tp 2, SP
  expect_equivalent("tcp", 2, 1, "ring", "zigzag", 2, "off");        // tp 2
  expect_equivalent("tcp", 4, 2, "ring", "zigzag", 2, "on");         // cp 2 x tp 2
  expect_equivalent("tcp", 4, 2, "ulysses", "contiguous", 2, "on");  // Ulysses on h/T heads
}

TEST(CpTraining, GlooEndsThereToo) {
  expect_equivalent("gloo", 4, 2, "ring", "zigzag");
  expect_equivalent("gloo", 2, 2, "ulysses", "zigzag");
}

TEST(CpTraining, FlagChecksNameTheNumbers) {
  CpTrainingOptions o = tiny_options(3, "ring", "zigzag");
  EXPECT_NE(check_cp_training_flags(o, 4).find("--cp 3 does not divide the 4 ranks"),
            std::string::npos)
      << check_cp_training_flags(o, 4);
  o = tiny_options(4, "ring", "zigzag");
  o.seq_len = 12;
  EXPECT_NE(check_cp_training_flags(o, 4).find("--seq-len 12"), std::string::npos);
  o = tiny_options(2, "ring", "zigzag");
  o.batch_size = 3;
  EXPECT_NE(check_cp_training_flags(o, 4).find("--batch-size 3"), std::string::npos);
  o = tiny_options(4, "ulysses", "zigzag");
  o.heads = 2;
  o.hidden = 16;
  EXPECT_NE(check_cp_training_flags(o, 4).find("Ulysses needs --heads 2"), std::string::npos);
  o = tiny_options(2, "ring", "zigzag");
  o.tp = 4;
  EXPECT_NE(check_cp_training_flags(o, 4).find("--cp 2 x --tp 4 does not divide the 4 ranks"),
            std::string::npos)
      << check_cp_training_flags(o, 4);
  o.tp = 3;
  EXPECT_NE(check_cp_training_flags(o, 6).find("--heads 4 do not divide over --tp 3"),
            std::string::npos)
      << check_cp_training_flags(o, 6);
  o = tiny_options(2, "ulysses", "zigzag");
  o.tp = 2;
  o.heads = 2;
  EXPECT_NE(check_cp_training_flags(o, 4).find("Ulysses needs the 1 heads"), std::string::npos)
      << check_cp_training_flags(o, 4);
  o = tiny_options(2, "ring", "zigzag");
  o.tp = 2;
  o.seq_len = 12;  // 6 tokens a cp rank, 3 a tp rank
  EXPECT_EQ(check_cp_training_flags(o, 4), "");
  o.tp = 4;
  o.cp = 1;
  o.seq_len = 6;  // 6 tokens over 4 tp ranks
  EXPECT_NE(check_cp_training_flags(o, 4).find("sequence parallelism needs the 6 tokens"),
            std::string::npos)
      << check_cp_training_flags(o, 4);
  o.sequence_parallel = "off";
  EXPECT_EQ(check_cp_training_flags(o, 4), "");
  EXPECT_EQ(check_cp_training_flags(tiny_options(2, "ring", "zigzag"), 4), "");
}

TEST(CpBench, TheLongestSequenceIsTheLastThatFitsAndGrowsWithC) {
  GptConfig g;
  g.vocab = 96;
  g.layers = 2;
  g.heads = 4;
  g.hidden = 64;
  const int64_t budget = 64 << 20;
  int64_t previous = 0;
  for (const int cp : {1, 2, 4}) {
    const int64_t s = longest_sequence_within(budget, g, cp);
    ASSERT_GT(s, 0);
    EXPECT_EQ(s % (2 * cp), 0) << "a multiple of 2C";
    EXPECT_LE(cp_rank_bytes(g, s, cp), budget);
    EXPECT_GT(cp_rank_bytes(g, s + 2 * cp, cp), budget) << "the next length must not fit";
    EXPECT_GT(s, previous) << "more ranks, a longer sequence";
    previous = s;
  }
  EXPECT_EQ(longest_sequence_within(1000, g, 2), 0) << "not even the state fits";
}

}  // namespace
}  // namespace course::test
