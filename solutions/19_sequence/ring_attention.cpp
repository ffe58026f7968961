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
int kv_tag(int step) {
  return 2 * step;
}
int grad_tag(int step) {
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
void add_into(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

// Folds a partial (o_b, lse_b) of `rows` rows of width d into the running (o_a, lse_a).
// BEGIN SOLUTION: per row: m = max(lse_a, lse_b); weights e^(lse - m); a row at -inf takes b
void merge_partial(int64_t rows, int64_t d, const float* o_b, const float* lse_b, float* o_a,
                   float* lse_a) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    if (lse_b[i] == -inf) continue;  // the partial saw no key of this row
    float* oa = o_a + i * d;
    const float* ob = o_b + i * d;
    if (lse_a[i] == -inf) {  // nothing seen yet: the partial is the row so far
      std::copy(ob, ob + d, oa);
      lse_a[i] = lse_b[i];
      continue;
    }
    const float m = std::max(lse_a[i], lse_b[i]);
    const float wa = std::exp(lse_a[i] - m), wb = std::exp(lse_b[i] - m);
    const float total = wa + wb;  // e^(lse - m): wa / total = e^(lse_a - lse)
    for (int64_t f = 0; f < d; ++f) oa[f] = (wa * oa[f] + wb * ob[f]) / total;
    lse_a[i] = m + std::log(total);
  }
}
// END SOLUTION

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
  // BEGIN SOLUTION: o = 0, lse = -inf; per step: post the next isend/irecv, fold pairs, wait
  const int next_rank = (rank + 1) % world, prev_rank = (rank - 1 + world) % world;
  std::fill(op.begin(), op.end(), 0.0f);
  std::fill(lsep.begin(), lsep.end(), -std::numeric_limits<float>::infinity());
  for (int step = 0; step < world; ++step) {
    const int owner = (rank - step + world) % world;  // whose block this rank holds now
    const std::vector<int> theirs = chunks_of(layout, world, owner);
    WorkPtr send, recv;
    if (step < world - 1) {  // the next step's block travels while this one computes
      send = cp.isend(kv, next_rank, kv_tag(step));
      recv = cp.irecv(next, prev_rank, kv_tag(step));
      count.floats_sent += static_cast<int64_t>(kv.size());
    }
    for (int qh = 0; qh < 2; ++qh) {
      for (int kh = 0; kh < 2; ++kh) {
        if (theirs[kh] > mine[qh]) continue;  // every key after every query: masked whole
        const AttentionShape pair{n, half, d, /*causal=*/theirs[kh] == mine[qh]};
        attention_tiled_forward(pair, tiles, qp.data() + qh * block, kv.data() + kh * block,
                                kv.data() + (2 + kh) * block, part_o.data(), part_lse.data());
        merge_partial(rows, d, part_o.data(), part_lse.data(), op.data() + qh * block,
                      lsep.data() + qh * rows);
        ++count.block_products;
      }
    }
    if (send) {
      send->wait();
      recv->wait();
      std::swap(kv, next);
    }
  }
  // END SOLUTION
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
  // BEGIN SOLUTION: per step: post kv's isend/irecv and dk/dv's irecv, add shares, send dk/dv
  const int next_rank = (rank + 1) % world, prev_rank = (rank - 1 + world) % world;
  for (int step = 0; step < world; ++step) {
    const int owner = (rank - step + world) % world;
    const std::vector<int> theirs = chunks_of(layout, world, owner);
    WorkPtr send_kv, recv_kv, send_grad, recv_grad;
    if (step < world - 1) {
      send_kv = cp.isend(kv, next_rank, kv_tag(step));
      recv_kv = cp.irecv(next, prev_rank, kv_tag(step));
      count.floats_sent += static_cast<int64_t>(kv.size());
    }
    if (world > 1) recv_grad = cp.irecv(grad_next, prev_rank, grad_tag(step));
    for (int qh = 0; qh < 2; ++qh) {
      for (int kh = 0; kh < 2; ++kh) {
        if (theirs[kh] > mine[qh]) continue;
        const AttentionShape pair{n, half, d, /*causal=*/theirs[kh] == mine[qh]};
        attention_tiled_backward(pair, tiles, qp.data() + qh * block, kv.data() + kh * block,
                                 kv.data() + (2 + kh) * block, op.data() + qh * block,
                                 lsep.data() + qh * rows, dop.data() + qh * block, part_dq.data(),
                                 part_dk.data(), part_dv.data());
        add_into(part_dq.data(), dqp.data() + qh * block, block);
        add_into(part_dk.data(), grad.data() + kh * block, block);
        add_into(part_dv.data(), grad.data() + (2 + kh) * block, block);
        ++count.block_products;
      }
    }
    if (world > 1) {  // this rank's share is in: pass the block's dk/dv on towards its owner
      send_grad = cp.isend(grad, next_rank, grad_tag(step));
      count.floats_sent += static_cast<int64_t>(grad.size());
      send_grad->wait();
      recv_grad->wait();
      std::swap(grad, grad_next);
    }
    if (send_kv) {
      send_kv->wait();
      recv_kv->wait();
      std::swap(kv, next);
    }
  }
  // END SOLUTION
  unpack_chunks(dqp.data(), n, seq, d, dq);
  unpack_chunks(grad.data(), n, seq, d, dk);
  unpack_chunks(grad.data() + 2 * block, n, seq, d, dv);
  if (traffic != nullptr) {
    traffic->floats_sent += count.floats_sent;
    traffic->block_products += count.block_products;
  }
}

}  // namespace course
