// bigram.h: lesson 17, given: the count-based bigram model, the baseline the GPT must beat.
//
//   const BigramModel bigram(train_tokens, tokenizer.vocab_size());
//   double nats = bigram.loss(validation_batches);     // mean -log p(next | previous)
//
// p(b | a) = (count(a, b) + α) / (count(a) + α V), with count(a, b) the times token b
// follows token a in the training tokens and α = 0.1 (additive smoothing: no pair gets
// probability 0, so the loss stays finite on text the training set never showed). α is
// small because most of the V² pairs never occur: add-one would give them about a third of
// the probability mass of a rare character.
//
// It is the best a model can do that sees only the previous character; a GPT that uses the
// rest of its context must do better. Its loss is measured on the same validation windows
// as the GPT's (each target predicted from the input just before it), in nats per character
// (log(V) for a uniform guess, about 4.6 for V = 100).
#pragma once

#include <cstdint>
#include <vector>

#include "text_corpus.h"

namespace course {

/// A smoothed bigram model of token ids (see the top of this file).
class BigramModel {
 public:
  /// Counts the pairs of `tokens`. REQUIRES: vocab >= 1, every token in [0, vocab),
  /// alpha > 0 (ConfigError otherwise).
  BigramModel(const std::vector<int32_t>& tokens, int64_t vocab, double alpha = 0.1);

  /// -log p(next | previous) in nats.
  double nll(int32_t previous, int32_t next) const;
  /// The mean of nll over every (input, target) pair of the batches.
  double loss(const std::vector<TokenBatch>& batches) const;
  /// The mean of nll over consecutive pairs of `tokens` (at least two).
  double loss(const std::vector<int32_t>& tokens) const;
  int64_t vocab() const { return vocab_; }

 private:
  int64_t vocab_;
  std::vector<double> log_prob_;  // [previous * vocab + next]
};

}  // namespace course
