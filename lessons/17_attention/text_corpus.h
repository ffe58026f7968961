// text_corpus.h: lesson 17, given: the text the GPT learns, its character tokenizer, the
// train/validation split and random batches.
//
//   const TextSplit text = load_fortunes("/usr/share/games/fortunes");
//   const CharTokenizer tok(text.train);              // the training text's bytes
//   const std::vector<int32_t> train = tok.encode(text.train);
//   Rng rng(1);
//   TokenBatch b = random_batch(train, /*batch=*/16, /*seq=*/64, rng);  // [16, 64], [1024]
//
// THE CORPUS: English prose from Debian's `fortunes` package (BSD licence, the classic
// fortune-mod collection), which `make setup` installs: files of short quotations, jokes
// and verse, one "fortune" per paragraph, each ended by a line holding only "%". The
// files of kFortuneFiles (literature, humorists, wisdom, people, ...) come to about 1 MB of
// plain ASCII, about 6 000 fortunes: enough text for a character model to learn words and
// punctuation in two minutes, small enough to read whole at start-up, and no download at
// run time. The offensive collection is a separate package (fortunes-off) that is never
// read; files of jargon, code or ASCII art (computers, linux, art) are left out too.
//
// THE SPLIT (fixed, no randomness): each file's fortunes in order; the last 10%
// (rounded up) of every file's fortunes are validation, the rest training. Each fortune
// keeps its "%\n" terminator, so no fortune straddles the split and the model learns
// where one ends. Validation therefore draws from every file, as training does.
//
// THE TOKENIZER: one token per byte. Token 0 is "unknown" (a byte the training text never
// holds; decoded as '?'), then the distinct bytes of the training text in increasing
// order: about 100 tokens. save_vocab writes the bytes, one decimal number a line, to a
// text file beside the checkpoint (vocab_path_for), so a checkpoint is decoded with the
// vocabulary it was trained with.
//
// BATCHES: a window of S + 1 consecutive tokens starting anywhere (uniform, from the Rng)
// gives the inputs (its first S tokens) and the targets (its last S: each input's next
// token). Validation uses fixed_batches: evenly spaced windows, the same every time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rng.h"
#include "tensor.h"

namespace course {

/// Where Debian installs the fortunes.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// The fortune files read, in this order (see the top of this file).
const std::vector<std::string>& fortune_files();

/// The training and validation text.
struct TextSplit {
  std::string train;                ///< every fortune but each file's last 10%, each ended by "%\n"
  std::string validation;           ///< each file's last 10% of fortunes
  int64_t train_fortunes = 0;       ///< fortunes in train
  int64_t validation_fortunes = 0;  ///< fortunes in validation
};

/// The fortunes of one file's text: the paragraphs between lines holding only "%", each
/// with its "%\n" terminator appended; empty ones are dropped.
std::vector<std::string> split_fortunes(const std::string& text);

/// Splits the fortunes of several texts (one per file) as described at the top of this
/// file. REQUIRES: 0 <= validation_fraction < 1.
TextSplit split_train_validation(const std::vector<std::string>& texts,
                                 double validation_fraction = 0.1);

/// Reads fortune_files() from `dir` and splits them. A file that is missing, unreadable or
/// empty, or a directory without any fortune, is a ConfigError naming the file and saying
/// how to install it (`make setup`, or apt-get install fortunes).
TextSplit load_fortunes(const std::string& dir, double validation_fraction = 0.1);

/// "" when load_fortunes(dir) would find every file non-empty, else the problem.
std::string fortunes_problem(const std::string& dir);

/// A byte-level tokenizer (see the top of this file).
class CharTokenizer {
 public:
  /// The vocabulary of `text`'s distinct bytes, after the unknown token.
  explicit CharTokenizer(const std::string& text);
  /// A vocabulary of exactly these bytes (load_vocab). REQUIRES: distinct, increasing.
  static CharTokenizer from_bytes(const std::vector<unsigned char>& bytes);

  /// Tokens: 1 + the number of distinct bytes.
  int64_t vocab_size() const { return static_cast<int64_t>(bytes_.size()) + 1; }
  /// One token per byte; bytes outside the vocabulary become kUnknown.
  std::vector<int32_t> encode(const std::string& text) const;
  /// The bytes of `tokens`; kUnknown (or an id outside the vocabulary) is '?'.
  std::string decode(const std::vector<int32_t>& tokens) const;
  /// The vocabulary's bytes, token 1 first.
  const std::vector<unsigned char>& bytes() const { return bytes_; }

  /// The token of bytes the vocabulary lacks.
  static constexpr int32_t kUnknown = 0;

 private:
  CharTokenizer() = default;
  std::vector<unsigned char> bytes_;
  int32_t token_of_[256] = {};  // byte -> token (kUnknown when absent)
};

/// Writes the vocabulary to `path`: a first line "course char vocabulary", then each byte
/// in decimal, one a line. ConfigError when the file cannot be written.
void save_vocab(const CharTokenizer& tokenizer, const std::string& path);
/// Reads what save_vocab wrote; ConfigError naming `path` when it is missing or malformed.
CharTokenizer load_vocab(const std::string& path);
/// The vocabulary file beside a checkpoint: "gpt.safetensors" -> "gpt.vocab.txt" (other
/// names get ".vocab.txt" appended).
std::string vocab_path_for(const std::string& checkpoint_path);

/// A batch of windows: inputs [B, S] and targets [B*S], token ids as floats.
struct TokenBatch {
  Tensor inputs;   ///< [B, S]
  Tensor targets;  ///< [B*S]: targets[b*S + t] is the token after inputs[b, t]
};

/// B windows of S + 1 tokens at uniform random starts drawn from `rng` (one draw each, in
/// order). REQUIRES: tokens.size() > seq (ConfigError naming both otherwise).
TokenBatch random_batch(const std::vector<int32_t>& tokens, int64_t batch, int64_t seq, Rng& rng);

/// `count` batches of B windows each, the windows' starts evenly spaced over `tokens`:
/// the same windows every call (the validation set). REQUIRES as random_batch.
std::vector<TokenBatch> fixed_batches(const std::vector<int32_t>& tokens, int64_t batch,
                                      int64_t seq, int64_t count);

}  // namespace course
