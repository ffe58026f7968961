// ring_attention.cpp: lesson 19, the exercise: ring attention's forward and backward over
// the context-parallel group (ring_attention.h has the ring, the steps and the cost).
#include "ring_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "error.h"

namespace course {

namespace {

// The tags of the ring's messages: step s's k/v block and its dk/dv buffer.
[[maybe_unused]] int kv_tag(int step) {
  return 2 * step;
}
[[maybe_unused]] int grad_tag(int step) {
  return 2 * step + 1;
}

// [n, L, w] (this rank's local order) to chunk-major [2][n][L/2][w], so that each chunk
// slot is one contiguous [n, L/2, w] array, as attention.h's kernels take them.
void pack_chunks(const float* x, int64_t n, int64_t seq, int64_t width, float* out) {
  const int64_t half = seq / 2;
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t b = 0; b < n; ++b) {
      const float* src = x + (b * seq + h * half) * width;
      std::copy(src, src + half * width, out + (h * n + b) * half * width);
    }
  }
}

// The inverse of pack_chunks.
void unpack_chunks(const float* packed, int64_t n, int64_t seq, int64_t width, float* x) {
  const int64_t half = seq / 2;
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t b = 0; b < n; ++b) {
      const float* src = packed + (h * n + b) * half * width;
      std::copy(src, src + half * width, x + (b * seq + h * half) * width);
    }
  }
}

// y += x over n entries.
[[maybe_unused]] void add_into(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// Folds a partial (o_b, lse_b) of `rows` rows of width d into the running (o_a, lse_a).
// TODO(lesson19): per row: m = max(lse_a, lse_b); weights e^(lse - m); a row at -inf takes b

}  // namespace

void ring_attention_forward(ProcessGroup& cp, SequenceLayout layout, const AttentionShape& local,
                            const AttentionTiles& tiles, const float* q, const float* k,
                            const float* v, float* o, float* lse, RingTraffic* traffic) {
  check_ring_attention(local, tiles, "ring_attention_forward");
  const int world = cp.size(), rank = cp.rank();
  const int64_t n = local.batch_heads, seq = local.seq, d = local.head_dim, half = seq / 2;
  const int64_t block = n * half * d;  // one chunk slot of one array
  const int64_t rows = n * half;       // one chunk slot of lse
  std::vector<float> qp(2 * block), op(2 * block), lsep(2 * rows);
  pack_chunks(q, n, seq, d, qp.data());
  // The travelling block: k slot 0, k slot 1, v slot 0, v slot 1.
  std::vector<float> kv(4 * block), next(4 * block);
  pack_chunks(k, n, seq, d, kv.data());
  pack_chunks(v, n, seq, d, kv.data() + 2 * block);
  std::vector<float> part_o(block), part_lse(rows);
  const std::vector<int> mine = chunks_of(layout, world, rank);
  RingTraffic count;
  // TODO(lesson19): o = 0, lse = -inf; per step: post the next isend/irecv, fold pairs, wait
  COURSE_TODO();
  unpack_chunks(op.data(), n, seq, d, o);
  unpack_chunks(lsep.data(), n, seq, 1, lse);
  if (traffic != nullptr) {
    traffic->floats_sent += count.floats_sent;
    traffic->block_products += count.block_products;
  }
}

void ring_attention_backward(ProcessGroup& cp, SequenceLayout layout, const AttentionShape& local,
                             const AttentionTiles& tiles, const float* q, const float* k,
                             const float* v, const float* o, const float* lse, const float* dout,
                             float* dq, float* dk, float* dv, RingTraffic* traffic) {
  check_ring_attention(local, tiles, "ring_attention_backward");
  const int world = cp.size(), rank = cp.rank();
  const int64_t n = local.batch_heads, seq = local.seq, d = local.head_dim, half = seq / 2;
  const int64_t block = n * half * d, rows = n * half;
  std::vector<float> qp(2 * block), op(2 * block), dop(2 * block), lsep(2 * rows);
  pack_chunks(q, n, seq, d, qp.data());
  pack_chunks(o, n, seq, d, op.data());
  pack_chunks(dout, n, seq, d, dop.data());
  pack_chunks(lse, n, seq, 1, lsep.data());
  std::vector<float> kv(4 * block), next(4 * block);
  pack_chunks(k, n, seq, d, kv.data());
  pack_chunks(v, n, seq, d, kv.data() + 2 * block);
  // The dk/dv buffer that travels with the block: dk slot 0, dk slot 1, dv slot 0, dv slot 1.
  std::vector<float> grad(4 * block, 0.0f), grad_next(4 * block);
  std::vector<float> dqp(2 * block, 0.0f), part_dq(block), part_dk(block), part_dv(block);
  const std::vector<int> mine = chunks_of(layout, world, rank);
  RingTraffic count;
  // TODO(lesson19): per step: post kv's isend/irecv and dk/dv's irecv, add shares, send dk/dv
  COURSE_TODO();
  unpack_chunks(dqp.data(), n, seq, d, dq);
  unpack_chunks(grad.data(), n, seq, d, dk);
  unpack_chunks(grad.data() + 2 * block, n, seq, d, dv);
  if (traffic != nullptr) {
    traffic->floats_sent += count.floats_sent;
    traffic->block_products += count.block_products;
  }
}

}  // namespace course
