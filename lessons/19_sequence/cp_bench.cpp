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
#include "output_file.h"
#include "ring_attention.h"
#include "saved_tensors.h"
#include "sequence_layout.h"
#include "sp_bench.h"
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

void balance_table(const std::string& csv_path, std::ostream* out) {
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
  if (out) table.write_csv(output_beside(csv_path, "balance.csv"));
}

struct Variant {
  std::string name;
  std::function<Variable(const Variable&, const Variable&, const Variable&)> op;
  std::function<int64_t(int64_t /*n*/, int64_t /*local*/)> model_bytes;  // fwd + bwd, payload
};

void budget_table(const CpTrainingOptions& o, const std::string& csv_path, std::ostream* out) {
  GptConfig g;
  g.vocab = 96;
  g.layers = o.layers;
  g.heads = o.heads;
  g.hidden = o.hidden;
  const auto budget = static_cast<int64_t>(o.memory_budget_mib * (1 << 20));
  if (out) {
    *out << "\n# Table 3: one sequence per rank within --memory-budget "
         << format_fixed(o.memory_budget_mib, 1) << " MiB (L " << g.layers << ", H " << g.hidden
         << ", " << g.heads << " heads; state 16 psi + activations of S/C tokens + the ring's "
         << "buffers)\n";
  }
  BenchTable table({{"C", 3},
                    {"longest S", 10},
                    {"S = 256 C", 10},
                    {"act MiB/rank", 13},
                    {"state MiB", 10},
                    {"ring MiB", 9}});
  if (out) table.print_header(*out);
  for (const int c : {1, 2, 4, 8}) {
    const int64_t seq = 256 * c;
    GptConfig at = g;
    at.context = seq;
    at.attention = AttentionKind::tiled;
    const auto mib = [](int64_t bytes) {
      return format_fixed(static_cast<double>(bytes) / (1 << 20), 3);
    };
    const int64_t act =
        gpt_activation_formula(at, 1, seq / c, RecomputePolicy::none, Precision::fp32).total();
    const int64_t state = 16 * gpt_parameter_count(at);
    table.add_row(
        {std::to_string(c), std::to_string(longest_sequence_within(budget, g, c)),
         std::to_string(seq), mib(act), mib(state), mib(cp_rank_bytes(g, seq, c) - act - state)},
        out);
  }
  table.add_note(
      "the state grows with S by the position embedding's S x H (GPT-2's learned "
      "positions); the activations per rank stay flat",
      out);
  if (out) table.write_csv(output_beside(csv_path, "budget.csv"));
}

}  // namespace

int64_t cp_rank_bytes(const GptConfig& config, int64_t seq, int cp) {
  GptConfig g = config;
  g.context = seq;
  g.attention = AttentionKind::tiled;
  const int64_t local = seq / cp, state = 16 * gpt_parameter_count(g);
  const int64_t activations =
      gpt_activation_formula(g, 1, local, RecomputePolicy::none, Precision::fp32).total();
  const int64_t ring = cp > 1 ? 4 * 6 * local * g.hidden : 0;  // k, v in flight; dk, dv
  return state + activations + ring;
}

int64_t longest_sequence_within(int64_t budget_bytes, const GptConfig& config, int cp) {
  const int64_t step = 2 * static_cast<int64_t>(cp);
  const auto fits = [&](int64_t chunks) {
    return cp_rank_bytes(config, chunks * step, cp) <= budget_bytes;
  };
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = 2;
  while (hi * step <= (int64_t{1} << 24) && fits(hi)) lo = hi, hi *= 2;
  hi = std::min(hi, (int64_t{1} << 24) / step + 1);
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo * step;
}

Verdict run_cp_bench(const CpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& all,
                     const std::string& csv_path, std::ostream& out_stream) {
  openblas_set_num_threads(1);
  std::ostream* out = mesh.rank() == 0 ? &out_stream : nullptr;
  ProcessGroup& cp = *mesh.group("cp");
  const int c = cp.size();
  balance_table(csv_path, out);
  budget_table(o, csv_path, out);
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
      const double ms = 1e3 * slowest_median(times, all);
      const auto sent_max = static_cast<int64_t>(
          slowest_samples({static_cast<double>(sent)}, all)[0]);  // the largest over ranks
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
    table.write_csv(output_beside(csv_path, "np" + std::to_string(c) + ".csv"));
  }
  off_model += run_sp_table(o, all, csv_path, out);
  if (off_model > 0) {
    return Verdict::fail(std::to_string(off_model) +
                         " row(s): the bytes sent are off the model beyond the framing");
  }
  return Verdict::pass("the bytes sent match the models; tables beside " + csv_path);
}

}  // namespace course
