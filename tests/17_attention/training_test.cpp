// training_test.cpp: lesson 17, the given training run (gpt_training.h) on a tiny text: a
// few dozen steps lower the validation loss, the bigram baseline is finite and below a
// uniform guess, the checkpoint and vocabulary come back, and the flag checks name the
// numbers and files at fault.
//
//   ./build/solutions/test_17 --gtest_filter='GptTraining*'
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/tiny_fortunes.h"
#include "gpt_training.h"
#include "text_corpus.h"

namespace course {
namespace {

using test::tiny_fortunes;

namespace fs = std::filesystem;

GptTrainingOptions tiny_options() {
  GptTrainingOptions o;
  o.steps = 30;
  o.seq_len = 16;
  o.batch_size = 8;
  o.layers = 1;
  o.heads = 2;
  o.hidden = 16;
  o.lr = 1e-2;
  o.eval_every = 0;
  o.eval_batches = 2;
  o.sample = 20;
  return o;
}

TEST(GptTraining, AShortRunLowersTheLossAndTheBigramIsBelowUniform) {
  const TextSplit text{tiny_fortunes(200, 0), tiny_fortunes(20, 3), 200, 20};
  const GptTrainingOptions o = tiny_options();
  const GptTrainingResult r = train_gpt(o, text, nullptr);
  ASSERT_EQ(r.train_losses.size(), 30U);
  EXPECT_LT(r.final_loss, r.initial_loss - 0.5) << r.initial_loss << " -> " << r.final_loss;
  EXPECT_TRUE(std::isfinite(r.bigram_loss));
  EXPECT_LT(r.bigram_loss, std::log(static_cast<double>(r.vocab)));
  EXPECT_EQ(r.sample.size(), 20U);
  EXPECT_GT(r.tokens_per_second, 0);
}

TEST(GptTraining, TheCheckpointLoadsBackAndInitContinuesFromIt) {
  const fs::path dir = fs::temp_directory_path() / "gpt_training_test";
  fs::create_directories(dir);
  const TextSplit text{tiny_fortunes(100, 0), tiny_fortunes(10, 1), 100, 10};
  GptTrainingOptions o = tiny_options();
  o.steps = 5;
  o.sample = 0;
  o.checkpoint = (dir / "tiny.safetensors").string();
  const GptTrainingResult first = train_gpt(o, text, nullptr);  // throws if it differs
  EXPECT_TRUE(fs::exists(dir / "tiny.vocab.txt"));
  GptTrainingOptions resumed = o;
  resumed.init = o.checkpoint;
  resumed.checkpoint.clear();
  resumed.steps = 0;
  const GptTrainingResult again = train_gpt(resumed, text, nullptr);
  EXPECT_EQ(again.final_loss, first.final_loss);
  fs::remove_all(dir);
}

TEST(GptTraining, FlagChecksNameTheNumbersAndFiles) {
  const fs::path dir = fs::temp_directory_path() / "gpt_training_flags_test";
  fs::create_directories(dir);
  GptTrainingOptions o = tiny_options();
  o.data = dir.string();
  o.heads = 3;
  EXPECT_NE(check_gpt_training_flags(o).find("--heads 3 does not divide --hidden 16"),
            std::string::npos);
  o.heads = 2;
  EXPECT_NE(check_gpt_training_flags(o).find((dir / fortune_files()[0]).string()),
            std::string::npos);
  for (const std::string& name : fortune_files()) std::ofstream(dir / name) << tiny_fortunes(20, 0);
  EXPECT_EQ(check_gpt_training_flags(o), "");

  o.checkpoint = (dir / "c.safetensors").string();
  o.steps = 1;
  o.sample = 0;
  train_gpt(o, load_fortunes(o.data), nullptr);
  GptTrainingOptions init = tiny_options();
  init.data = o.data;
  init.init = o.checkpoint;
  EXPECT_EQ(check_gpt_training_flags(init), "");
  init.seq_len = 17;
  EXPECT_NE(check_gpt_training_flags(init).find("--seq-len 17 is longer than the context 16"),
            std::string::npos)
      << check_gpt_training_flags(init);
  init.seq_len = 16;
  init.hidden = 32;
  const std::string shape = check_gpt_training_flags(init);
  EXPECT_NE(shape.find("1 layers, 2 heads, hidden 16"), std::string::npos) << shape;
  EXPECT_NE(shape.find("1 layers, 2 heads, hidden 32"), std::string::npos) << shape;
  init.hidden = 16;
  std::ofstream(dir / "c.vocab.txt") << "course char vocabulary\n32\n";
  EXPECT_NE(check_gpt_training_flags(init).find("its vocabulary file"), std::string::npos)
      << check_gpt_training_flags(init);
  init.init = (dir / "absent.safetensors").string();
  EXPECT_NE(check_gpt_training_flags(init).find("absent.safetensors"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace course
