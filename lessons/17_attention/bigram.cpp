// bigram.cpp: lesson 17, given: the bigram baseline (see bigram.h).
#include "bigram.h"

#include <cmath>
#include <string>

#include "error.h"

namespace course {

BigramModel::BigramModel(const std::vector<int32_t>& tokens, int64_t vocab, double alpha)
    : vocab_(vocab) {
  if (vocab < 1 || !(alpha > 0)) {
    throw ConfigError("BigramModel: need vocab >= 1 and alpha > 0 (got " + std::to_string(vocab) +
                      ", " + std::to_string(alpha) + ")");
  }
  std::vector<double> counts(vocab * vocab, 0.0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      throw ConfigError("BigramModel: token " + std::to_string(tokens[i]) + " at position " +
                        std::to_string(i) + " is outside the vocabulary of " +
                        std::to_string(vocab));
    }
    if (i > 0) counts[tokens[i - 1] * vocab + tokens[i]] += 1;
  }
  log_prob_.resize(counts.size());
  for (int64_t a = 0; a < vocab; ++a) {
    double row = 0;
    for (int64_t b = 0; b < vocab; ++b) row += counts[a * vocab + b];
    const double denom = row + alpha * static_cast<double>(vocab);
    for (int64_t b = 0; b < vocab; ++b) {
      log_prob_[a * vocab + b] = std::log((counts[a * vocab + b] + alpha) / denom);
    }
  }
}

double BigramModel::nll(int32_t previous, int32_t next) const {
  if (previous < 0 || previous >= vocab_ || next < 0 || next >= vocab_) {
    throw ConfigError("BigramModel: tokens (" + std::to_string(previous) + ", " +
                      std::to_string(next) + ") outside the vocabulary of " +
                      std::to_string(vocab_));
  }
  return -log_prob_[previous * vocab_ + next];
}

double BigramModel::loss(const std::vector<TokenBatch>& batches) const {
  double total = 0;
  int64_t n = 0;
  for (const TokenBatch& b : batches) {
    const float* in = b.inputs.data();
    const float* out = b.targets.data();
    for (int64_t i = 0; i < b.targets.numel(); ++i) {
      total += nll(static_cast<int32_t>(in[i]), static_cast<int32_t>(out[i]));
      ++n;
    }
  }
  if (n == 0) throw ConfigError("BigramModel: no windows to measure the loss on");
  return total / static_cast<double>(n);
}

double BigramModel::loss(const std::vector<int32_t>& tokens) const {
  if (tokens.size() < 2) throw ConfigError("BigramModel: the loss needs at least two tokens");
  double total = 0;
  for (size_t i = 1; i < tokens.size(); ++i) total += nll(tokens[i - 1], tokens[i]);
  return total / static_cast<double>(tokens.size() - 1);
}

}  // namespace course
