// cp_bench.cpp: lesson 19, given: ./lesson19 --bench (cp_bench.h).
#include "cp_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include "activation_ledger.h"
#include "attention_op.h"
#include "bench_stats.h"
#include "bench_table.h"
#include "byte_stream.h"
#include "clock.h"
#include "gpt.h"
#include "ops.h"
#include "ring_attention.h"
#include "saved_tensors.h"
#include "sequence_layout.h"
#include "ulysses.h"

namespace course {

namespace {

constexpr int64_t kBatch = 4, kHeads = 4, kDim = 16;

Tensor wavy(const Shape& shape, int salt) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(std::sin(0.1 * static_cast<double>(i) + salt));
  }
  return t;
}

double max_over(ProcessGroup& all, double v) {
  std::vector<float> x{static_cast<float>(v)};
  all.all_reduce(x, ReduceOp::MAX);
  return x[0];
}

void balance_table(std::ostream* out) {
  if (out) *out << "\n# Table 1: causal ring attention's chunk products per rank\n";
  BenchTable table({{"C", 3}, {"layout", 11}, {"slowest", 8}, {"mean", 8}, {"slowest/mean", 13}});
  if (out) table.print_header(*out);
  for (const int c : {2, 4, 8}) {
    for (const SequenceLayout layout : {SequenceLayout::contiguous, SequenceLayout::zigzag}) {
      int64_t slowest = 0, total = 0;
      for (int r = 0; r < c; ++r) {
        const int64_t n = causal_block_products(layout, c, r);
        slowest = std::max(slowest, n);
        total += n;
      }
      const double mean = static_cast<double>(total) / c;
      table.add_row({std::to_string(c), sequence_layout_name(layout), std::to_string(slowest),
                     format_fixed(mean, 2), format_fixed(static_cast<double>(slowest) / mean, 3)},
                    out);
    }
  }
  if (out) table.write_csv("bench-results/lesson19_balance.csv");
}

struct Variant {
  std::string name;
  std::function<Variable(const Variable&, const Variable&, const Variable&)> op;
  std::function<int64_t(int64_t /*n*/, int64_t /*local*/)> model_bytes;  // fwd + bwd, payload
};

}  // namespace

Verdict run_cp_bench(const CpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& all,
                     std::ostream& out_stream) {
  openblas_set_num_threads(1);
  std::ostream* out = mesh.rank() == 0 ? &out_stream : nullptr;
  ProcessGroup& cp = *mesh.group("cp");
  const int c = cp.size();
  balance_table(out);
  std::vector<Variant> variants;
  for (const SequenceLayout layout : {SequenceLayout::zigzag, SequenceLayout::contiguous}) {
    variants.push_back({std::string("ring ") + sequence_layout_name(layout),
                        [&cp, layout](const Variable& q, const Variable& k, const Variable& v) {
                          return ring_attention(q, k, v, cp, layout);
                        },
                        [c](int64_t n, int64_t local) {
                          const AttentionShape shape{n, local, kDim, true};
                          return 4 * (ring_attention_forward_floats(shape, c) +
                                      ring_attention_backward_floats(shape, c));
                        }});
  }
  if (kHeads % c == 0) {
    variants.push_back({"ulysses",
                        [&cp](const Variable& q, const Variable& k, const Variable& v) {
                          return ulysses_attention(q, k, v, cp, SequenceLayout::zigzag,
                                                   AttentionKind::tiled);
                        },
                        [c](int64_t n, int64_t local) {
                          const int64_t numel = n * local * kDim;  // q's floats
                          return 4 * (ulysses_attention_forward_floats(numel, c) +
                                      ulysses_attention_backward_floats(numel, c));
                        }});
  }
  if (out) {
    *out << "\n# Table 2: attention over C = " << c << " ranks, B " << kBatch << ", " << kHeads
         << " heads, d " << kDim << ", forward + backward of the op on S/C tokens; the GPT's "
         << "activations per rank (L " << o.layers << ", H " << o.hidden << ")\n";
  }
  BenchTable table({{"S", 5},
                    {"variant", 16},
                    {"ms", 8},
                    {"sent B", 10},
                    {"model B", 10},
                    {"act/rank B", 11},
                    {"act C=1 B", 11},
                    {"ratio", 6}});
  if (out) table.print_header(*out);
  int off_model = 0;
  for (const int64_t seq : {64, 128, 256}) {
    if (seq % (2 * c) != 0) continue;
    const int64_t local = seq / c;
    const Tensor q = wavy({kBatch, kHeads, local, kDim}, cp.rank() + 1);
    const Tensor k = wavy({kBatch, kHeads, local, kDim}, cp.rank() + 5);
    const Tensor v = wavy({kBatch, kHeads, local, kDim}, cp.rank() + 9);
    const Tensor w = wavy({kBatch, kHeads, local, kDim}, cp.rank() + 13);
    // The GPT's activations: one rank's S/C tokens against one process's S.
    GptConfig g;
    g.vocab = 96;
    g.context = seq;
    g.layers = o.layers;
    g.heads = kHeads;
    g.hidden = o.hidden;
    const int64_t whole =
        gpt_activation_formula(g, kBatch, seq, RecomputePolicy::none, Precision::fp32).total();
    for (const Variant& variant : variants) {
      std::vector<double> times;
      int64_t sent = 0;
      for (int round = 0; round <= 5; ++round) {
        const Variable qv(q, true), kv(k, true), vv(v, true);
        all.barrier();
        const uint64_t before = tcp_bytes_sent();
        const auto t0 = std::chrono::steady_clock::now();
        sum(mul(variant.op(qv, kv, vv), Variable(w))).backward();
        const double t = seconds_since(t0);
        sent = static_cast<int64_t>(tcp_bytes_sent() - before);
        if (round > 0) times.push_back(t);
      }
      const double ms = 1e3 * max_over(all, median(times));
      const auto sent_max = static_cast<int64_t>(max_over(all, static_cast<double>(sent)));
      const int64_t model = variant.model_bytes(kBatch * kHeads, local);
      // The GPT on this rank's tokens, the core replaced: what its graph keeps.
      Rng rng(1);
      Gpt model_gpt(g, rng);
      model_gpt.set_attention_core(variant.op);
      const TokenBatch batch = counting_batch(g.vocab, kBatch, local);
      std::vector<int64_t> positions = token_positions(SequenceLayout::zigzag, seq, c, cp.rank());
      const Variable logits = model_gpt.forward(Variable(batch.inputs), positions);
      const Variable loss = cross_entropy(logits, batch.targets);
      std::vector<Tensor> params;
      for (const Variable& p : model_gpt.parameters()) params.push_back(p.data());
      const int64_t act = saved_tensor_ledger(loss, params).total_bytes;
      loss.backward();  // collective: every rank's ring must run its backward
      const bool near = sent_max >= model && sent_max <= model + model / 50 + 4096;
      off_model += near ? 0 : 1;
      table.add_row({std::to_string(seq), variant.name, format_fixed(ms, 2),
                     std::to_string(sent_max), std::to_string(model), std::to_string(act),
                     std::to_string(whole), format_fixed(static_cast<double>(whole) / act, 2)},
                    out);
    }
  }
  if (out) {
    table.add_note("sent B: payload and framing (16 B a message); model B: the payload alone", out);
    table.write_csv("bench-results/lesson19_np" + std::to_string(c) + ".csv");
  }
  if (off_model > 0) {
    return Verdict::fail(std::to_string(off_model) +
                         " row(s): the bytes sent are off the model beyond the framing");
  }
  return Verdict::pass("the bytes sent match the models; tables in bench-results/");
}

}  // namespace course
