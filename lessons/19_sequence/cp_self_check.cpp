// cp_self_check.cpp: lesson 19, given: ./lesson19's self-check (cp_self_check.h).
#include "cp_self_check.h"

#include <cmath>
#include <functional>
#include <vector>

#include "attention_op.h"
#include "ops.h"
#include "ring_attention.h"
#include "sequence_layout.h"
#include "tensor_ops.h"
#include "ulysses.h"

namespace course {

const char* const kLesson19SelfCheckPassed =
    "self-check: ring attention and Ulysses give the whole sequence's attention and gradients";

namespace {

constexpr int64_t kCheckBatch = 2, kCheckDim = 4;

// [B, heads, S, d] values of order 1 that depend on the problem, the position and the
// feature; `which` gives q, k, v and the loss weights their own.
Tensor whole(int64_t heads, int64_t seq, int which) {
  Tensor t = Tensor::empty({kCheckBatch, heads, seq, kCheckDim});
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t f = i % kCheckDim, pos = (i / kCheckDim) % seq, problem = i / (kCheckDim * seq);
    t.data()[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(pos * (which + 2)) +
                                              0.9 * static_cast<double>(f) +
                                              0.23 * static_cast<double>(problem) + which));
  }
  return t;
}

// The rank's tokens of a [B, heads, S, d] tensor: [B, heads, S/C, d] in local order
// (sequence_layout.h's shard_sequence, the B heads problems as its batch).
Tensor mine(const Tensor& full, SequenceLayout layout, int cp, int rank) {
  const Shape& shape = full.shape();
  const Tensor shard =
      shard_sequence(full.reshape({shape[0] * shape[1], shape[2], shape[3]}), layout, cp, rank);
  return shard.reshape({shape[0], shape[1], shape[2] / cp, shape[3]});
}

std::string first_difference(const Tensor& got, const Tensor& want, const std::string& what,
                             int rank, const std::vector<int64_t>& positions) {
  const int64_t local = static_cast<int64_t>(positions.size());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float g = got.data()[i], w = want.data()[i];
    if (!(std::fabs(g - w) <= 1e-5f * (1 + std::fabs(w)))) {
      const int64_t token = (i / kCheckDim) % local;
      return what + " on rank " + std::to_string(rank) + " differs from the whole sequence's at " +
             "position " + std::to_string(positions[static_cast<size_t>(token)]) + " (" +
             std::to_string(g) + ", expected " + std::to_string(w) + ")";
    }
  }
  return "";
}

using CpAttention = std::function<Variable(const Variable&, const Variable&, const Variable&)>;

// Where to look when the output, dq, or dk and dv differ: the likely causes, by function.
struct Causes {
  std::string output, dq, dkdv;
};

const Causes kRingCauses{
    "ring_attention_forward: the merge must weight the rows by e^(lse_a - lse) and "
    "e^(lse_b - lse); at step s the block is rank (r - s)'s, its chunks chunks_of(owner); "
    "causal only on the diagonal chunk pair, a later chunk skipped",
    "ring_attention_backward: each chunk pair's dq with the whole row's o and lse, the same "
    "owner and causal rule as the forward",
    "ring_attention_backward: dk and dv travel with their block (rank (r - s)'s at step s) "
    "and must take the C-th hop home"};

const Causes kUlyssesCauses{
    "ulysses_to_heads / ulysses_to_sequence: rank j takes heads [j h, (j+1) h); a source "
    "rank's tokens go to their positions in the sequence (token_positions of that rank, not "
    "rank order)",
    "the backward's re-layouts (the same two, on the gradients)",
    "the backward's re-layouts (the same two, on the gradients)"};

std::string check_op(ProcessGroup& cp, SequenceLayout layout, int64_t heads,
                     const std::string& name, const CpAttention& op, const Causes& causes) {
  const int c = cp.size(), r = cp.rank();
  const int64_t seq = 8 * c;
  const std::vector<int64_t> positions = token_positions(layout, seq, c, r);
  const Tensor q = whole(heads, seq, 0), k = whole(heads, seq, 1), v = whole(heads, seq, 2);
  const Tensor w = whole(heads, seq, 3);
  // One process's answer on the whole sequence.
  const Variable qs(q, true), ks(k, true), vs(v, true);
  const Variable ys = causal_self_attention(qs, ks, vs, AttentionKind::naive);
  sum(mul(ys, Variable(w))).backward();
  // This rank's, on its tokens.
  const Variable ql(mine(q, layout, c, r), true), kl(mine(k, layout, c, r), true),
      vl(mine(v, layout, c, r), true);
  const Variable yl = op(ql, kl, vl);
  sum(mul(yl, Variable(mine(w, layout, c, r)))).backward();
  const std::string where = name + " (" + sequence_layout_name(layout) +
                            ", C = " + std::to_string(c) + ", S = " + std::to_string(seq) + ")";
  if (std::string d = first_difference(yl.data(), mine(ys.data(), layout, c, r),
                                       where + ": the output", r, positions);
      !d.empty()) {
    return d + "; look at " + causes.output;
  }
  const std::vector<std::pair<const char*, std::pair<Variable, Variable>>> grads = {
      {"dq", {ql, qs}}, {"dk", {kl, ks}}, {"dv", {vl, vs}}};
  for (const auto& [g, pair] : grads) {
    if (std::string d = first_difference(pair.first.grad(), mine(pair.second.grad(), layout, c, r),
                                         where + ": " + g, r, positions);
        !d.empty()) {
      return d + "; look at " + (std::string(g) == "dq" ? causes.dq : causes.dkdv);
    }
  }
  return "";
}

// Every rank's verdict, the first problem of the lowest failing rank on all of them.
std::string agree(ProcessGroup& cp, const std::string& problem) {
  std::vector<float> failed{problem.empty() ? 1e9f : static_cast<float>(cp.rank())};
  cp.all_reduce(failed, ReduceOp::MIN);
  if (failed[0] > 1e8f) return "";
  return problem.empty() ? "rank " + std::to_string(static_cast<int>(failed[0])) +
                               " found a problem (its own line above names it)"
                         : problem;
}

}  // namespace

std::string run_lesson19_self_check(ProcessGroup& cp) {
  // Every rank runs every check (each is collective), keeping its first problem: a rank
  // that stopped early would leave the others waiting in the next check's exchange.
  std::string problem;
  const auto keep = [&problem](std::string p) {
    if (problem.empty()) problem = std::move(p);
  };
  for (const SequenceLayout layout : {SequenceLayout::zigzag, SequenceLayout::contiguous}) {
    keep(check_op(
        cp, layout, 3, "ring_attention",
        [&cp, layout](const Variable& q, const Variable& k, const Variable& v) {
          return ring_attention(q, k, v, cp, layout);
        },
        kRingCauses));
    keep(check_op(
        cp, layout, 2 * cp.size(), "ulysses_attention",
        [&cp, layout](const Variable& q, const Variable& k, const Variable& v) {
          return ulysses_attention(q, k, v, cp, layout, AttentionKind::tiled);
        },
        kUlyssesCauses));
  }
  return agree(cp, problem);
}

}  // namespace course
