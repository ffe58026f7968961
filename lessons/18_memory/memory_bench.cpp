// memory_bench.cpp: lesson 18, given: ./lesson18 --bench (memory_bench.h).
#include "memory_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>

#include "activation_ledger.h"
#include "adamw.h"
#include "bench_stats.h"
#include "bench_table.h"
#include "clock.h"
#include "fp16_bench.h"
#include "gpt_training.h"
#include "grad_clip.h"
#include "memory_training.h"
#include "mixed_precision.h"
#include "ops.h"
#include "output_file.h"
#include "svg_canvas.h"

namespace course {

namespace {

std::string mib_cell(int64_t bytes) {
  return format_fixed(static_cast<double>(bytes) / (1 << 20), 3);
}

GptConfig bench_config(const MemoryBenchOptions& o, int64_t seq, AttentionKind kind) {
  GptConfig c;
  c.vocab = o.vocab;
  c.context = seq;
  c.layers = o.layers;
  c.heads = o.heads;
  c.hidden = o.hidden;
  c.attention = kind;
  return c;
}

const std::vector<RecomputePolicy> kPolicies = {RecomputePolicy::none, RecomputePolicy::selective,
                                                RecomputePolicy::full};

// TABLE 1. Returns the number of rows whose ledger differed from the formula.
int activation_table(const MemoryBenchOptions& o, std::ostream& out) {
  out << "\n# Table 1: activations kept for backward, ledger against formula (bytes)\n";
  BenchTable table({{"B", 4},
                    {"S", 5},
                    {"H", 4},
                    {"heads", 6},
                    {"kind", 6},
                    {"policy", 10},
                    {"dtype", 6},
                    {"ledger(B)", 12},
                    {"formula(B)", 12},
                    {"per token(B)", 13}});
  table.print_header(out);
  int differ = 0;
  struct Case {
    int64_t batch, seq, hidden, heads, layers;
  };
  std::vector<Case> cases = {{4, 64, 64, 4, 2}, {2, 128, 64, 4, 2}, {1, 96, 48, 3, 2}};
  for (const int64_t s : {64, 128, 256, 512}) cases.push_back({1, s, 64, 4, 1});
  for (const Case& k : cases) {
    const bool sweep = k.layers == 1;
    for (const AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
      for (const RecomputePolicy policy : kPolicies) {
        for (const Precision p : {Precision::fp32, Precision::bf16}) {
          if (sweep && (policy != RecomputePolicy::none || p != Precision::fp32)) continue;
          GptConfig c;
          c.vocab = o.vocab;
          c.context = k.seq;
          c.layers = k.layers;
          c.heads = k.heads;
          c.hidden = k.hidden;
          c.attention = kind;
          Rng rng(1);
          Gpt model(c, rng);
          const int64_t measured =
              measure_gpt_activations(model, counting_batch(c.vocab, k.batch, k.seq), policy, p)
                  .total_bytes;
          const int64_t formula = gpt_activation_formula(c, k.batch, k.seq, policy, p).total();
          differ += measured != formula ? 1 : 0;
          table.add_row({std::to_string(k.batch), std::to_string(k.seq), std::to_string(k.hidden),
                         std::to_string(k.heads), attention_kind_name(kind),
                         recompute_policy_name(policy), precision_name(p), std::to_string(measured),
                         std::to_string(formula), std::to_string(measured / (k.batch * k.seq))},
                        &out);
        }
      }
    }
  }
  table.add_note(
      "the last 8 rows: one block, S growing: naive's bytes per token grow by 4 heads x S"
      " x 4 B, tiled's stay flat",
      &out);
  table.write_csv(output_beside(o.csv_path, "activations.csv"));
  return differ;
}

// One real AdamW step of `model` in fp32 (the optimizer's state then exists); Ψ.
int64_t adam_state_elements(Gpt& model, const TokenBatch& batch) {
  const std::vector<Variable> params = model.parameters();
  AdamW adam(params, {.lr = 1e-3});
  cross_entropy(model.forward(Variable(batch.inputs)), batch.targets).backward();
  adam.step();
  int64_t elements = 0;
  for (const auto& [name, t] : adam.state_tensors()) elements += t.numel();
  return elements;
}

void memory_table(const MemoryBenchOptions& o, std::ostream& out) {
  const GptConfig c = bench_config(o, o.seq, AttentionKind::naive);
  const TokenBatch batch = counting_batch(c.vocab, o.batch, o.seq);
  Rng rng(1);
  Gpt model(c, rng);
  const int64_t psi = model.parameter_count();
  const int64_t adam = adam_state_elements(model, batch);
  out << "\n# Table 2: memory per rank, the GPT of " << c.layers << " layers, hidden " << c.hidden
      << ", " << c.heads << " heads, vocab " << c.vocab << ": psi = " << psi << " parameters; B "
      << o.batch << " x S " << o.seq << ", naive attention (MiB)\n";
  BenchTable table({{"dtype", 6},
                    {"params", 9},
                    {"grads", 9},
                    {"master", 9},
                    {"adam", 9},
                    {"state", 9},
                    {"16psi", 9},
                    {"act none", 9},
                    {"act sel", 9},
                    {"act full", 9}});
  table.print_header(out);
  for (const Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    const int64_t e = element_bytes(p);
    const int64_t params = psi * e, grads = psi * e, master = p == Precision::fp32 ? 0 : 4 * psi,
                  adam_bytes = 4 * adam;
    std::vector<std::string> row = {
        precision_name(p), mib_cell(params),     mib_cell(grads),
        mib_cell(master),  mib_cell(adam_bytes), mib_cell(params + grads + master + adam_bytes),
        mib_cell(16 * psi)};
    for (const RecomputePolicy policy : kPolicies) {
      row.push_back(mib_cell(measure_gpt_activations(model, batch, policy, p).total_bytes));
    }
    table.add_row(row, &out);
  }
  table.add_note("state: counted from the tensors (Adam's from a real step); act: the ledger",
                 &out);
  table.write_csv(output_beside(o.csv_path, "memory.csv"));

  out << "\n# Table 2b: ZeRO (lesson 13) on this GPT, model state per rank, modelled (MiB)\n";
  BenchTable zero(
      {{"dtype", 6}, {"ranks", 6}, {"DDP", 9}, {"ZeRO-1", 9}, {"ZeRO-2", 9}, {"ZeRO-3", 9}});
  zero.print_header(out);
  for (const Precision p : {Precision::fp32, Precision::bf16}) {
    for (const int world : {1, 2, 4}) {
      std::vector<std::string> row = {p == Precision::fp32 ? "fp32" : "mixed",
                                      std::to_string(world)};
      for (int stage = 0; stage <= 3; ++stage) {
        row.push_back(mib_cell(zero_state_bytes(psi, p, stage, world)));
      }
      zero.add_row(row, &out);
    }
  }
  zero.add_note("mixed: 2+2 psi 16-bit params and grads, 12 psi float32 master and Adam", &out);
  zero.write_csv(output_beside(o.csv_path, "zero.csv"));
}

void time_rows(const MemoryBenchOptions& o, int64_t hidden, BenchTable& table, std::ostream& out) {
  GptConfig c = bench_config(o, o.seq, AttentionKind::naive);
  c.hidden = hidden;
  const TokenBatch batch = counting_batch(c.vocab, o.batch, o.seq);
  Rng rng(1);
  Gpt model(c, rng);
  const std::vector<Variable> params = model.parameters();
  AdamW adam(params, {.lr = 1e-4});
  const auto time_once = [](const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return seconds_since(t0);
  };
  const auto step = [&] {
    adam.zero_grad();
    cross_entropy(model.forward(Variable(batch.inputs)), batch.targets).backward();
    clip_grad_norm(params, 1.0);
    adam.step();
  };
  const auto forward_only = [&] {
    const NoGradGuard no_grad;
    cross_entropy(model.forward(Variable(batch.inputs)), batch.targets);
  };
  // Rounds interleaved (the forward, then each policy's step), after one warm-up round, so
  // that a shared machine's slow moments fall on every row alike; the median of each.
  std::vector<double> forwards;
  std::map<RecomputePolicy, std::vector<double>> samples;
  for (int round = 0; round <= o.steps; ++round) {
    install_model_seams(model, RecomputePolicy::none, Precision::fp32);
    const double f = time_once(forward_only);
    if (round > 0) forwards.push_back(f);
    for (const RecomputePolicy policy : kPolicies) {
      install_model_seams(model, policy, Precision::fp32);
      const double t = time_once(step);
      if (round > 0) samples[policy].push_back(t);
    }
  }
  const double forward = median(forwards);
  std::map<RecomputePolicy, double> steps;
  for (const RecomputePolicy policy : kPolicies) steps[policy] = median(samples[policy]);
  install_model_seams(model, RecomputePolicy::none, Precision::fp32);
  const double none = steps[RecomputePolicy::none];
  for (const RecomputePolicy policy : kPolicies) {
    table.add_row({std::to_string(hidden), recompute_policy_name(policy),
                   format_fixed(1e3 * steps[policy], 2), format_fixed(steps[policy] / none, 3),
                   format_fixed(1e3 * forward, 2), format_fixed(1e3 * (forward + none), 2),
                   format_fixed(steps[policy] / (forward + none), 3)},
                  &out);
  }
}

void time_table(const MemoryBenchOptions& o, std::ostream& out) {
  out << "\n# Table 3: step time, fp32, naive attention, B " << o.batch << " x S " << o.seq
      << ", one BLAS thread, median of " << o.steps << " steps (ms)\n";
  BenchTable table({{"H", 5},
                    {"policy", 10},
                    {"step", 9},
                    {"vs none", 8},
                    {"forward", 9},
                    {"fwd+none", 9},
                    {"vs fwd+none", 12}});
  table.print_header(out);
  time_rows(o, o.hidden, table, out);
  time_rows(o, 2 * o.hidden, table, out);
  table.add_note(
      "full recomputes every block's forward: about one extra forward; selective "
      "recomputes attention's core only, a share of the step that falls as H grows "
      "against S (attention's 4SH flops per token against the linears' 24H^2)",
      &out);
  table.write_csv(output_beside(o.csv_path, "time.csv"));
}

void budget_table(const MemoryBenchOptions& o, std::ostream& out) {
  const int64_t budget = static_cast<int64_t>(o.memory_budget_mib * (1 << 20));
  out << "\n# Table 4: the largest batch within --memory-budget "
      << format_fixed(o.memory_budget_mib, 1)
      << " MiB per rank (model state + peak activations, the formulas), naive attention\n";
  BenchTable table({{"S", 5},
                    {"dtype", 6},
                    {"none", 8},
                    {"selective", 10},
                    {"full", 8},
                    {"tokens none", 12},
                    {"tokens full", 12}});
  table.print_header(out);
  int64_t smallest_needed = 0;
  bool any = false;
  for (const int64_t seq : {64, 128, 256, 512}) {
    const GptConfig c = bench_config(o, seq, AttentionKind::naive);
    const int64_t psi = gpt_parameter_count(c);
    for (const Precision p : {Precision::fp32, Precision::bf16}) {
      const int64_t state = zero_state_bytes(psi, p, 0, 1);
      std::vector<std::string> row = {std::to_string(seq), precision_name(p)};
      std::map<RecomputePolicy, int64_t> best;
      for (const RecomputePolicy policy : kPolicies) {
        best[policy] = largest_batch_within(budget, state, c, seq, policy, p);
        any = any || best[policy] > 0;
        row.push_back(std::to_string(best[policy]));
        if (seq == 64 && p == Precision::bf16 && policy == RecomputePolicy::full) {
          smallest_needed = state + gpt_activation_formula(c, 1, seq, policy, p).peak();
        }
      }
      row.push_back(std::to_string(best[RecomputePolicy::none] * seq));
      row.push_back(std::to_string(best[RecomputePolicy::full] * seq));
      table.add_row(row, &out);
    }
  }
  if (!any) {
    table.add_note("no batch fits " + format_fixed(o.memory_budget_mib, 1) +
                       " MiB: the smallest budget that holds one sequence of 64 (bf16, full) is " +
                       mib_cell(smallest_needed) + " MiB",
                   &out);
  }
  table.write_csv(output_beside(o.csv_path, "budget.csv"));
}

}  // namespace

int64_t zero_state_bytes(int64_t psi, Precision precision, int stage, int world) {
  const bool mixed = precision != Precision::fp32;
  const int64_t params = (mixed ? 2 : 4) * psi, grads = (mixed ? 2 : 4) * psi,
                optimizer = (mixed ? 12 : 8) * psi;
  const auto cut = [world](int64_t bytes, bool sharded) { return sharded ? bytes / world : bytes; };
  return cut(params, stage >= 3) + cut(grads, stage >= 2) + cut(optimizer, stage >= 1);
}

int64_t largest_batch_within(int64_t budget_bytes, int64_t state_bytes, const GptConfig& c,
                             int64_t seq, RecomputePolicy policy, Precision precision) {
  const auto fits = [&](int64_t b) {
    return state_bytes + gpt_activation_formula(c, b, seq, policy, precision).peak() <=
           budget_bytes;
  };
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = 2;
  while (hi <= (int64_t{1} << 20) && fits(hi)) lo = hi, hi *= 2;
  hi = std::min<int64_t>(hi, (int64_t{1} << 20) + 1);
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

Verdict run_memory_bench(const MemoryBenchOptions& o, std::ostream& out) {
  openblas_set_num_threads(1);
  const int differ = activation_table(o, out);
  memory_table(o, out);
  time_table(o, out);
  budget_table(o, out);
  fp16_tables(o, out);
  if (differ > 0) {
    return Verdict::fail(std::to_string(differ) +
                         " row(s) of table 1: the ledger differs from "
                         "the formula");
  }
  return Verdict::pass("every ledger count equals its formula; tables beside " + o.csv_path);
}

}  // namespace course
