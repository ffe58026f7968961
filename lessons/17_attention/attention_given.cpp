// attention_given.cpp: lesson 17, given: the argument checks every kernel of attention.h
// runs first (so that the stubs keep them).
#include <string>

#include "attention.h"
#include "error.h"

namespace course {

namespace {

void require_positive(int64_t value, const char* what, const char* function) {
  if (value < 1) {
    throw ConfigError(std::string(function) + ": " + what + " = " + std::to_string(value) +
                      ", must be at least 1");
  }
}

}  // namespace

void check_attention_shape(const AttentionShape& s, const char* function) {
  require_positive(s.batch_heads, "batch_heads", function);
  require_positive(s.seq, "seq", function);
  require_positive(s.head_dim, "head_dim", function);
}

void check_attention_tiles(const AttentionTiles& tiles, const char* function) {
  require_positive(tiles.block_q, "block_q", function);
  require_positive(tiles.block_k, "block_k", function);
}

}  // namespace course
