// bench_test.cpp: lesson 17, the given bench of gpt_bench.h at a tiny size: it creates its
// output folder, writes its tables and picture, and the ledger's count of what attention
// keeps for backward equals the formula, for both kinds, at lengths that are and are not a
// multiple of the block.
//
//   ctest -L lesson17 -R GptBench    or     ./build/solutions/test_17 --gtest_filter='GptBench*'
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/temp_dir.h"
#include "gpt_bench.h"

namespace course {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(GptBench, TheFormulaEqualsTheLedgerForBothKinds) {
  for (const bool tiled : {false, true}) {
    for (const int64_t seq : {1, 7, 32, 45}) {
      const AttentionSavedBytes b = measure_attention_saved_bytes(tiled, 2, 3, seq, 4);
      EXPECT_EQ(b.ledger, b.formula) << (tiled ? "tiled" : "naive") << ", S = " << seq;
      EXPECT_EQ(b.formula, attention_saved_bytes_formula(tiled, 6, seq, 4));
    }
  }
  // P's 4 n S² against lse's 4 n S: the difference at S = 64, n = 6, d = 4.
  EXPECT_EQ(attention_saved_bytes_formula(false, 6, 64, 4), 3 * 4 * 6 * 64 * 4 + 4 * 6 * 64 * 64);
  EXPECT_EQ(attention_saved_bytes_formula(true, 6, 64, 4), 4 * 4 * 6 * 64 * 4 + 4 * 6 * 64);
}

class GptBenchFiles : public test::TempDir {};

TEST_F(GptBenchFiles, RunsTinyAndWritesItsFilesIntoAFolderItCreates) {
  GptBenchOptions o;
  o.seq_lens = {8, 40};
  o.repeats = 1;
  o.train_batch = 2;
  o.train_seq = 16;
  o.layers = 1;
  o.hidden = 16;
  o.train_heads = 2;
  o.vocab = 11;
  o.train_steps = 1;
  const std::string dir = path("bench-results");
  o.csv_path = dir + "/lesson17.csv";  // the driver's --csv default: the tables beside it
  ASSERT_FALSE(fs::exists(dir));
  std::ostringstream out;
  const Verdict v = run_gpt_bench(o, out);
  EXPECT_TRUE(v.passed) << v.detail << "\n" << out.str();
  for (const char* name :
       {"lesson17_attention.csv", "lesson17_training.csv", "lesson17_attention.svg"}) {
    EXPECT_TRUE(fs::exists(fs::path(dir) / name)) << name << "\n" << out.str();
  }
  const std::string csv = read_file(fs::path(dir) / "lesson17_attention.csv");
  EXPECT_NE(csv.find("\n40,naive,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n40,tiled,"), std::string::npos) << csv;
  const std::string training = read_file(fs::path(dir) / "lesson17_training.csv");
  EXPECT_NE(training.find("\nnaive,"), std::string::npos) << training;
  EXPECT_NE(training.find("\ntiled,"), std::string::npos) << training;
  EXPECT_NE(out.str().find("6 N' + 12 L S H"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace course
