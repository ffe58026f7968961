// text_corpus_test.cpp: lesson 17, the given corpus code (text_corpus.h) and the bigram
// baseline (bigram.h): fortunes split at "%" lines, the fixed train/validation split, the
// tokenizer and its vocabulary file, batch windows, and the errors for a missing corpus.
//
//   ./build/solutions/test_17 --gtest_filter='TextCorpus*:Bigram*'
#include "text_corpus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bigram.h"
#include "error.h"

namespace course {
namespace {

namespace fs = std::filesystem;

// A file of n fortunes, fortune i naming its file and index (so each is recognisable).
std::string fortune_file(const std::string& name, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += name + " fortune " + std::to_string(i) + "\n\t-- line two of " + std::to_string(i) +
            "\n%\n";
  }
  return text;
}

// A scratch directory removed at the end of the test.
struct TempDir {
  fs::path path =
      fs::temp_directory_path() /
      ("text_corpus_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
       "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
  }
};

TEST(TextCorpus, SplitsFortunesAtPercentLinesKeepingTheTerminator) {
  const std::vector<std::string> f = split_fortunes("one\ntwo\n%\n%\nthree\n%\nfour");
  ASSERT_EQ(f.size(), 3U);  // the empty fortune between two "%" lines is dropped
  EXPECT_EQ(f[0], "one\ntwo\n%\n");
  EXPECT_EQ(f[1], "three\n%\n");
  EXPECT_EQ(f[2], "four\n%\n");  // a last fortune without "%" gets one
  EXPECT_EQ(split_fortunes("a 100% sure\n%\n")[0], "a 100% sure\n%\n");  // '%' inside a line
}

TEST(TextCorpus, TheSplitIsFixedDisjointAndTakesEachFilesLastTenth) {
  const std::vector<std::string> texts = {fortune_file("a", 20), fortune_file("b", 7)};
  const TextSplit s = split_train_validation(texts, 0.1);
  EXPECT_EQ(s.train_fortunes, 18 + 6);  // ceil(2) of 20 and ceil(0.7) of 7 held out
  EXPECT_EQ(s.validation_fortunes, 2 + 1);
  EXPECT_EQ(s.validation,
            "a fortune 18\n\t-- line two of 18\n%\na fortune 19\n\t-- line two of "
            "19\n%\nb fortune 6\n\t-- line two of 6\n%\n");
  EXPECT_NE(s.train.find("a fortune 17\n"), std::string::npos);
  EXPECT_EQ(s.train.find("a fortune 18\n"), std::string::npos);
  EXPECT_EQ(s.train.find("b fortune 6\n"), std::string::npos);
  EXPECT_EQ(s.train.size() + s.validation.size(), texts[0].size() + texts[1].size());
  const TextSplit again = split_train_validation(texts, 0.1);
  EXPECT_EQ(again.train, s.train);
  EXPECT_EQ(again.validation, s.validation);
  EXPECT_THROW(split_train_validation(texts, 1.0), ConfigError);
}

TEST(TextCorpus, TokenizerRoundTripsAndMapsUnknownBytesToTokenZero) {
  const std::string text = "Hello, world!\n\tzebra%";
  const CharTokenizer tok(text);
  EXPECT_EQ(tok.vocab_size(), 17);  // 16 distinct bytes and the unknown token
  const std::vector<int32_t> ids = tok.encode(text);
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(ids[0], 1 + 6);  // 'H' comes after '\t', '\n', ' ', '!', '%', ','
  for (size_t i = 1; i < tok.bytes().size(); ++i) EXPECT_LT(tok.bytes()[i - 1], tok.bytes()[i]);
  const std::vector<int32_t> odd = tok.encode("HQ~");
  EXPECT_EQ(odd[1], CharTokenizer::kUnknown);
  EXPECT_EQ(odd[2], CharTokenizer::kUnknown);
  EXPECT_EQ(tok.decode(odd), "H??");
}

TEST(TextCorpus, VocabularyFileRoundTripsAndNamesItselfWhenBad) {
  const TempDir dir;
  const CharTokenizer tok(std::string("the quick brown fox\n\x01\xff", 22));
  const std::string path = (dir.path / "m.vocab.txt").string();
  save_vocab(tok, path);
  const CharTokenizer back = load_vocab(path);
  EXPECT_EQ(back.bytes(), tok.bytes());
  EXPECT_EQ(back.encode("brown fox?"), tok.encode("brown fox?"));
  EXPECT_EQ(vocab_path_for("/x/gpt.safetensors"), "/x/gpt.vocab.txt");
  EXPECT_EQ(vocab_path_for("ckpt"), "ckpt.vocab.txt");
  dir.write("bad.txt", "course char vocabulary\n32\n300\n");
  try {
    load_vocab((dir.path / "bad.txt").string());
    FAIL() << "a byte value of 300 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_vocab((dir.path / "absent.txt").string()), ConfigError);
}

TEST(TextCorpus, BatchTargetsAreTheInputsShiftedByOne) {
  std::vector<int32_t> tokens(500);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7) % 97);
  Rng rng(3);
  const TokenBatch b = random_batch(tokens, 4, 9, rng);
  ASSERT_EQ(b.inputs.shape(), (Shape{4, 9}));
  ASSERT_EQ(b.targets.shape(), (Shape{36}));
  for (int64_t r = 0; r < 4; ++r) {
    // the window's start, found from its first token (i*7 mod 97 repeats only every 97)
    const auto first = static_cast<int32_t>(b.inputs.data()[r * 9]);
    for (int64_t t = 0; t < 9; ++t) {
      const float in = b.inputs.data()[r * 9 + t];
      const float next = b.targets.data()[r * 9 + t];
      EXPECT_EQ(static_cast<int32_t>(next), (static_cast<int32_t>(in) + 7) % 97) << r << "," << t;
    }
    EXPECT_GE(first, 0);
  }
  Rng same(3);
  EXPECT_EQ(random_batch(tokens, 4, 9, same).inputs.to_vector(), b.inputs.to_vector());
  const std::vector<TokenBatch> fixed = fixed_batches(tokens, 2, 9, 3);
  ASSERT_EQ(fixed.size(), 3U);
  EXPECT_EQ(fixed[0].inputs.data()[0], static_cast<float>(tokens[0]));        // the first start
  EXPECT_EQ(fixed[2].targets.data()[17], static_cast<float>(tokens.back()));  // the last window
  EXPECT_THROW(random_batch(std::vector<int32_t>(9, 1), 1, 9, rng), ConfigError);
}

TEST(TextCorpus, AMissingOrEmptyCorpusFileIsAConfigErrorNamingIt) {
  const TempDir dir;
  const std::string missing = fortunes_problem(dir.path.string());
  EXPECT_NE(missing.find(fortune_files()[0]), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing"), std::string::npos) << missing;
  for (const std::string& name : fortune_files()) dir.write(name, fortune_file(name, 10));
  EXPECT_EQ(fortunes_problem(dir.path.string()), "");
  const TextSplit s = load_fortunes(dir.path.string());
  EXPECT_EQ(s.validation_fortunes, static_cast<int64_t>(fortune_files().size()));
  dir.write("love", "");
  EXPECT_NE(fortunes_problem(dir.path.string()).find("love is empty"), std::string::npos);
  try {
    load_fortunes(dir.path.string());
    FAIL() << "an empty corpus file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find((dir.path / "love").string()), std::string::npos)
        << e.what();
  }
}

TEST(Bigram, LossIsTheSmoothedCountsNegativeLogAndBelowUniform) {
  // "abab...a" then "c": b always follows a, a follows b
  std::vector<int32_t> tokens;
  for (int i = 0; i < 50; ++i) tokens.insert(tokens.end(), {1, 2});
  tokens.push_back(3);
  const int64_t vocab = 4;
  const BigramModel m(tokens, vocab, 0.1);
  // after a (1): 50 b's in 50 pairs
  EXPECT_NEAR(m.nll(1, 2), -std::log((50 + 0.1) / (50 + 0.4)), 1e-12);
  EXPECT_NEAR(m.nll(1, 3), -std::log(0.1 / 50.4), 1e-12);
  EXPECT_NEAR(m.nll(2, 1), -std::log(49.1 / 50.4), 1e-12);  // 49 a's and 1 c follow b
  EXPECT_NEAR(m.nll(0, 0), std::log(4.0), 1e-12);           // never seen: uniform
  const double loss = m.loss(tokens);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_LT(loss, std::log(static_cast<double>(vocab)));
  EXPECT_THROW(BigramModel({0, 5}, vocab), ConfigError);
}

}  // namespace
}  // namespace course
