// sequence_layout.h: lesson 19, given: how a sequence of S tokens is cut over the C ranks of
// a context-parallel group, and the helpers that hand each rank its tokens.
//
//   const std::vector<int64_t> pos = token_positions(SequenceLayout::zigzag, S, C, rank);
//   Tensor mine = shard_sequence(tokens /*[B, S, W]*/, SequenceLayout::zigzag, C, rank);
//
// The sequence is cut into 2C chunks of S/(2C) tokens; each rank holds two of them, S/C
// tokens, stored in the order below (chunk 2r first for contiguous, chunk r first for
// zig-zag). S = 16, C = 4, chunks of 2 tokens:
//
//   chunk         0   1   2   3   4   5   6   7
//   contiguous   r0  r0  r1  r1  r2  r2  r3  r3      rank r: chunks 2r, 2r+1
//   zigzag       r0  r1  r2  r3  r3  r2  r1  r0      rank r: chunks r, 2C-1-r
//
// WHY ZIG-ZAG. With a causal mask, query chunk i needs key chunks 0..i: i + 1 (query chunk,
// key chunk) products, the diagonal one counted as one. Rank r's share over a ring pass:
//
//   contiguous   (2r + 1) + (2r + 2) = 4r + 3     rank 0: 3, rank C-1: 4C - 1
//   zigzag       (r + 1) + (2C - r)  = 2C + 1     the same on every rank
//
// The total is C (2C + 1), the mean 2C + 1: contiguous's slowest rank does (4C - 1)/(2C + 1)
// of the mean (C = 2: 7/5, C = 4: 15/9, towards 2 as C grows) and the ring, which moves in
// lock step, waits for it at every step. Zig-zag (Megatron's and torch's head-tail
// balancing) gives every rank the mean.
//
// What this is not: a data loader. Positional embeddings must use token_positions (a
// rank's tokens are not consecutive under zig-zag), and the loss's targets are sharded
// with the same call as the inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor.h"

namespace course {

/// How a context-parallel group holds a sequence (the picture above).
enum class SequenceLayout {
  contiguous,  ///< rank r: tokens [r S/C, (r+1) S/C)
  zigzag,      ///< rank r: chunks r and 2C-1-r (load-balanced under the causal mask)
};

/// "contiguous" or "zigzag"; ConfigError naming the choices otherwise (--layout's parser).
SequenceLayout parse_sequence_layout(const std::string& name);
/// "contiguous" or "zigzag".
const char* sequence_layout_name(SequenceLayout layout);

/// Throws ConfigError naming `function`, S and C unless cp >= 1, seq >= 1 and seq % (2 cp)
/// == 0 (both layouts cut the sequence into 2C equal chunks).
void check_sequence_split(int64_t seq, int cp, const char* function);

/// The two chunk indices rank `rank` holds, in the order it stores them.
/// REQUIRES: 0 <= rank < cp (ConfigError otherwise).
std::vector<int> chunks_of(SequenceLayout layout, int cp, int rank);

/// The global positions (0..S-1) of rank `rank`'s S/C tokens, in its local order.
/// REQUIRES: check_sequence_split(seq, cp) and 0 <= rank < cp.
std::vector<int64_t> token_positions(SequenceLayout layout, int64_t seq, int cp, int rank);

/// Rank `rank`'s tokens of a row-major [B, S, ...] tensor: [B, S/C, ...], local order.
/// REQUIRES: full.dim() >= 2, S = full.size(1) as token_positions.
Tensor shard_sequence(const Tensor& full, SequenceLayout layout, int cp, int rank);

/// The inverse: shards[r] is rank r's shard_sequence, all of one shape [B, S/C, ...];
/// returns [B, S, ...] in global order. ConfigError unless there are cp shards of one shape.
Tensor unshard_sequence(const std::vector<Tensor>& shards, SequenceLayout layout, int cp);

/// The (query chunk, key chunk) products rank `rank` computes in causal ring attention:
/// the pairs of its query chunks with the 2C key chunks where key <= query (the diagonal
/// one counted as one): 4 rank + 3 for contiguous, 2 cp + 1 for zigzag.
int64_t causal_block_products(SequenceLayout layout, int cp, int rank);

}  // namespace course
