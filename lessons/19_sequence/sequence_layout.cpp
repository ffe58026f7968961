// sequence_layout.cpp: lesson 19, given: the layouts of sequence_layout.h.
#include "sequence_layout.h"

#include <algorithm>

#include "error.h"

namespace course {

SequenceLayout parse_sequence_layout(const std::string& name) {
  if (name == "contiguous") return SequenceLayout::contiguous;
  if (name == "zigzag") return SequenceLayout::zigzag;
  throw ConfigError("sequence layout '" + name + "' is unknown; choose contiguous or zigzag");
}

const char* sequence_layout_name(SequenceLayout layout) {
  return layout == SequenceLayout::contiguous ? "contiguous" : "zigzag";
}

void check_sequence_split(int64_t seq, int cp, const char* function) {
  if (cp < 1 || seq < 1 || seq % (2 * static_cast<int64_t>(cp)) != 0) {
    throw ConfigError(std::string(function) + ": the sequence (S = " + std::to_string(seq) +
                      ") must split into 2C = " + std::to_string(2 * static_cast<int64_t>(cp)) +
                      " equal chunks for C = " + std::to_string(cp) +
                      " context-parallel ranks; make S a multiple of " +
                      std::to_string(2 * static_cast<int64_t>(cp)));
  }
}

std::vector<int> chunks_of(SequenceLayout layout, int cp, int rank) {
  if (cp < 1 || rank < 0 || rank >= cp) {
    throw ConfigError("chunks_of: rank " + std::to_string(rank) + " is not in a group of " +
                      std::to_string(cp));
  }
  if (layout == SequenceLayout::contiguous) return {2 * rank, 2 * rank + 1};
  return {rank, 2 * cp - 1 - rank};
}

std::vector<int64_t> token_positions(SequenceLayout layout, int64_t seq, int cp, int rank) {
  check_sequence_split(seq, cp, "token_positions");
  const int64_t chunk = seq / (2 * static_cast<int64_t>(cp));
  std::vector<int64_t> positions;
  positions.reserve(static_cast<size_t>(2 * chunk));
  for (const int c : chunks_of(layout, cp, rank)) {
    for (int64_t i = 0; i < chunk; ++i) positions.push_back(c * chunk + i);
  }
  return positions;
}

namespace {

// Elements per token of a [B, S, ...] tensor.
int64_t token_width(const Shape& shape) {
  int64_t width = 1;
  for (size_t i = 2; i < shape.size(); ++i) width *= shape[i];
  return width;
}

}  // namespace

Tensor shard_sequence(const Tensor& full, SequenceLayout layout, int cp, int rank) {
  if (!full.defined() || full.dim() < 2) {
    throw ConfigError("shard_sequence: expected a [B, S, ...] tensor, got " +
                      (full.defined() ? shape_str(full.shape()) : std::string("undefined")));
  }
  const int64_t batch = full.size(0), seq = full.size(1), width = token_width(full.shape());
  const std::vector<int64_t> positions = token_positions(layout, seq, cp, rank);
  const auto local = static_cast<int64_t>(positions.size());
  Shape shape = full.shape();
  shape[1] = local;
  Tensor out = Tensor::empty(shape);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < local; ++i) {
      const float* src = full.data() + (b * seq + positions[static_cast<size_t>(i)]) * width;
      std::copy(src, src + width, out.data() + (b * local + i) * width);
    }
  }
  return out;
}

Tensor unshard_sequence(const std::vector<Tensor>& shards, SequenceLayout layout, int cp) {
  if (cp < 1 || static_cast<int>(shards.size()) != cp) {
    throw ConfigError("unshard_sequence: " + std::to_string(shards.size()) +
                      " shards for C = " + std::to_string(cp) + " ranks; expected one per rank");
  }
  for (const Tensor& s : shards) {
    if (!s.defined() || s.dim() < 2 || s.shape() != shards[0].shape()) {
      throw ConfigError("unshard_sequence: shard " +
                        (s.defined() ? shape_str(s.shape()) : std::string("undefined")) +
                        ", expected every shard of one shape [B, S/C, ...]");
    }
  }
  const int64_t batch = shards[0].size(0), local = shards[0].size(1);
  const int64_t width = token_width(shards[0].shape()), seq = local * cp;
  Shape shape = shards[0].shape();
  shape[1] = seq;
  Tensor full = Tensor::empty(shape);
  for (int r = 0; r < cp; ++r) {
    const std::vector<int64_t> positions = token_positions(layout, seq, cp, r);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < local; ++i) {
        const float* src = shards[static_cast<size_t>(r)].data() + (b * local + i) * width;
        std::copy(src, src + width,
                  full.data() + (b * seq + positions[static_cast<size_t>(i)]) * width);
      }
    }
  }
  return full;
}

int64_t causal_block_products(SequenceLayout layout, int cp, int rank) {
  int64_t products = 0;
  for (const int c : chunks_of(layout, cp, rank)) products += c + 1;  // key chunks 0..c
  return products;
}

}  // namespace course
