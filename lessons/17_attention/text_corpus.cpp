// text_corpus.cpp: lesson 17, given: the fortunes corpus, tokenizer, split and batches
// (see text_corpus.h).
#include "text_corpus.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "error.h"

namespace course {

namespace {

const char* const kVocabHeader = "course char vocabulary";

std::string install_hint() {
  return "install Debian's fortunes package (make setup, or apt-get install fortunes), or "
         "point --data at a directory holding the fortune files";
}

// The file's bytes; "" for an empty file. ConfigError when it cannot be opened.
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read the corpus file " + path + ": " + install_hint());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void check_window(const std::vector<int32_t>& tokens, int64_t batch, int64_t seq) {
  if (batch < 1 || seq < 1 || static_cast<int64_t>(tokens.size()) <= seq) {
    throw ConfigError("batches of " + std::to_string(batch) + " windows of " + std::to_string(seq) +
                      " + 1 tokens need more than " + std::to_string(seq) +
                      " tokens (the text has " + std::to_string(tokens.size()) + ")");
  }
}

TokenBatch window_batch(const std::vector<int32_t>& tokens, const std::vector<int64_t>& starts,
                        int64_t seq) {
  const auto batch = static_cast<int64_t>(starts.size());
  TokenBatch b{Tensor::empty({batch, seq}), Tensor::empty({batch * seq})};
  float* in = b.inputs.data();
  float* out = b.targets.data();
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t t = 0; t < seq; ++t) {
      in[r * seq + t] = static_cast<float>(tokens[starts[r] + t]);
      out[r * seq + t] = static_cast<float>(tokens[starts[r] + t + 1]);
    }
  }
  return b;
}

}  // namespace

const std::vector<std::string>& fortune_files() {
  static const std::vector<std::string> files = {
      "literature", "humorists", "wisdom",      "people", "education",  "food",    "kids",
      "love",       "science",   "songs-poems", "work",   "platitudes", "fortunes"};
  return files;
}

std::vector<std::string> split_fortunes(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line == "%") {
      if (!current.empty()) out.push_back(current + "%\n");
      current.clear();
    } else {
      current += line + "\n";
    }
  }
  if (!current.empty()) out.push_back(current + "%\n");
  return out;
}

TextSplit split_train_validation(const std::vector<std::string>& texts,
                                 double validation_fraction) {
  if (!(validation_fraction >= 0 && validation_fraction < 1)) {
    throw ConfigError("the validation fraction must be in [0, 1) (got " +
                      std::to_string(validation_fraction) + ")");
  }
  TextSplit split;
  for (const std::string& text : texts) {
    const std::vector<std::string> fortunes = split_fortunes(text);
    const auto n = static_cast<int64_t>(fortunes.size());
    const auto held = static_cast<int64_t>(std::ceil(validation_fraction * static_cast<double>(n)));
    for (int64_t i = 0; i < n; ++i) {
      if (i < n - held) {
        split.train += fortunes[i];
        ++split.train_fortunes;
      } else {
        split.validation += fortunes[i];
        ++split.validation_fortunes;
      }
    }
  }
  return split;
}

std::string fortunes_problem(const std::string& dir) {
  for (const std::string& name : fortune_files()) {
    const std::string path = dir + "/" + name;
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) return "the corpus file " + path + " is missing: " + install_hint();
    if (in.tellg() <= 0) return "the corpus file " + path + " is empty: " + install_hint();
  }
  return "";
}

TextSplit load_fortunes(const std::string& dir, double validation_fraction) {
  std::vector<std::string> texts;
  for (const std::string& name : fortune_files()) {
    const std::string path = dir + "/" + name;
    texts.push_back(read_file(path));
    if (split_fortunes(texts.back()).empty()) {
      throw ConfigError("the corpus file " + path +
                        " holds no fortune (it is empty): " + install_hint());
    }
  }
  TextSplit split = split_train_validation(texts, validation_fraction);
  if (split.train.empty()) throw ConfigError("the corpus in " + dir + " has no training text");
  return split;
}

CharTokenizer::CharTokenizer(const std::string& text) {
  bool seen[256] = {};
  for (const char c : text) seen[static_cast<unsigned char>(c)] = true;
  for (int b = 0; b < 256; ++b) {
    if (seen[b]) {
      bytes_.push_back(static_cast<unsigned char>(b));
      token_of_[b] = static_cast<int32_t>(bytes_.size());
    }
  }
}

CharTokenizer CharTokenizer::from_bytes(const std::vector<unsigned char>& bytes) {
  CharTokenizer t;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i > 0 && bytes[i] <= bytes[i - 1]) {
      throw ConfigError("a vocabulary's bytes must be distinct and increasing (byte " +
                        std::to_string(bytes[i]) + " follows " + std::to_string(bytes[i - 1]) +
                        ")");
    }
    t.bytes_.push_back(bytes[i]);
    t.token_of_[bytes[i]] = static_cast<int32_t>(i + 1);
  }
  return t;
}

std::vector<int32_t> CharTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> out;
  out.reserve(text.size());
  for (const char c : text) out.push_back(token_of_[static_cast<unsigned char>(c)]);
  return out;
}

std::string CharTokenizer::decode(const std::vector<int32_t>& tokens) const {
  std::string out;
  out.reserve(tokens.size());
  for (const int32_t t : tokens) {
    const bool known = t >= 1 && t <= static_cast<int32_t>(bytes_.size());
    out += known ? static_cast<char>(bytes_[t - 1]) : '?';
  }
  return out;
}

void save_vocab(const CharTokenizer& tokenizer, const std::string& path) {
  std::ofstream out(path);
  out << kVocabHeader << "\n";
  for (const unsigned char b : tokenizer.bytes()) out << static_cast<int>(b) << "\n";
  out.flush();
  if (!out) throw ConfigError("cannot write the vocabulary file " + path);
}

CharTokenizer load_vocab(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw ConfigError("the vocabulary file " + path +
                      " is missing (save_vocab writes it beside the checkpoint)");
  }
  std::string line;
  if (!std::getline(in, line) || line != kVocabHeader) {
    throw ConfigError("the vocabulary file " + path + " does not start with \"" + kVocabHeader +
                      "\"");
  }
  std::vector<unsigned char> bytes;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    int value = -1;
    try {
      size_t used = 0;
      value = std::stoi(line, &used);
      if (used != line.size()) value = -1;
    } catch (const std::exception&) {
      value = -1;
    }
    if (value < 0 || value > 255) {
      throw ConfigError("the vocabulary file " + path + " holds \"" + line +
                        "\", not a byte value 0..255");
    }
    bytes.push_back(static_cast<unsigned char>(value));
  }
  try {
    return CharTokenizer::from_bytes(bytes);
  } catch (const ConfigError& e) {
    throw ConfigError("the vocabulary file " + path + ": " + e.detail());
  }
}

std::string vocab_path_for(const std::string& checkpoint_path) {
  const std::string ext = ".safetensors";
  if (checkpoint_path.size() > ext.size() &&
      checkpoint_path.compare(checkpoint_path.size() - ext.size(), ext.size(), ext) == 0) {
    return checkpoint_path.substr(0, checkpoint_path.size() - ext.size()) + ".vocab.txt";
  }
  return checkpoint_path + ".vocab.txt";
}

TokenBatch random_batch(const std::vector<int32_t>& tokens, int64_t batch, int64_t seq, Rng& rng) {
  check_window(tokens, batch, seq);
  const auto starts_range = static_cast<uint64_t>(static_cast<int64_t>(tokens.size()) - seq);
  std::vector<int64_t> starts(batch);
  for (int64_t& s : starts) s = static_cast<int64_t>(rng.below(starts_range));
  return window_batch(tokens, starts, seq);
}

std::vector<TokenBatch> fixed_batches(const std::vector<int32_t>& tokens, int64_t batch,
                                      int64_t seq, int64_t count) {
  check_window(tokens, batch, seq);
  const int64_t windows = batch * std::max<int64_t>(count, 0);
  const int64_t last_start = static_cast<int64_t>(tokens.size()) - seq - 1;
  std::vector<TokenBatch> out;
  for (int64_t c = 0; c < count; ++c) {
    std::vector<int64_t> starts(batch);
    for (int64_t r = 0; r < batch; ++r) {
      const int64_t w = c * batch + r;
      starts[r] = windows > 1 ? last_start * w / (windows - 1) : 0;
    }
    out.push_back(window_batch(tokens, starts, seq));
  }
  return out;
}

}  // namespace course
