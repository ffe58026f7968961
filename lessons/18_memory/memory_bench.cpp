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
#include "gpt_training.h"
#include "grad_clip.h"
#include "memory_training.h"
#include "mixed_precision.h"
#include "ops.h"
#include "output_file.h"
#include "svg_canvas.h"

namespace course {

namespace {

std::string mib(int64_t bytes) {
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
  table.write_csv(o.out_dir + "/lesson18_activations.csv");
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
    std::vector<std::string> row = {precision_name(p), mib(params),
                                    mib(grads),        mib(master),
                                    mib(adam_bytes),   mib(params + grads + master + adam_bytes),
                                    mib(16 * psi)};
    for (const RecomputePolicy policy : kPolicies) {
      row.push_back(mib(measure_gpt_activations(model, batch, policy, p).total_bytes));
    }
    table.add_row(row, &out);
  }
  table.add_note("state: counted from the tensors (Adam's from a real step); act: the ledger",
                 &out);
  table.write_csv(o.out_dir + "/lesson18_memory.csv");

  out << "\n# Table 2b: ZeRO (lesson 13) on this GPT, model state per rank, modelled (MiB)\n";
  BenchTable zero(
      {{"dtype", 6}, {"ranks", 6}, {"DDP", 9}, {"ZeRO-1", 9}, {"ZeRO-2", 9}, {"ZeRO-3", 9}});
  zero.print_header(out);
  for (const Precision p : {Precision::fp32, Precision::bf16}) {
    for (const int world : {1, 2, 4}) {
      std::vector<std::string> row = {p == Precision::fp32 ? "fp32" : "mixed",
                                      std::to_string(world)};
      for (int stage = 0; stage <= 3; ++stage) {
        row.push_back(mib(zero_state_bytes(psi, p, stage, world)));
      }
      zero.add_row(row, &out);
    }
  }
  zero.add_note("mixed: 2+2 psi 16-bit params and grads, 12 psi float32 master and Adam", &out);
  zero.write_csv(o.out_dir + "/lesson18_zero.csv");
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
  table.write_csv(o.out_dir + "/lesson18_time.csv");
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
                       mib(smallest_needed) + " MiB",
                   &out);
  }
  table.write_csv(o.out_dir + "/lesson18_budget.csv");
}

struct Curve {
  std::string name, colour;
  std::vector<double> losses;
};

void write_loss_svg(const std::vector<Curve>& curves, const std::string& path) {
  const double left = 60, top = 40, width = 560, height = 260;
  SvgCanvas svg(left + width + 170, top + height + 60);
  double ymin = 1e300, ymax = -1e300;
  size_t steps = 1;
  std::vector<std::vector<double>> smooth;
  for (const Curve& c : curves) {
    std::vector<double> s;
    double window = 0;
    for (size_t i = 0; i < c.losses.size(); ++i) {
      window += c.losses[i];
      if (i >= 10) window -= c.losses[i - 10];
      const double v = window / static_cast<double>(std::min<size_t>(i + 1, 10));
      s.push_back(v);
      if (std::isfinite(v)) ymin = std::min(ymin, v), ymax = std::max(ymax, v);
    }
    steps = std::max(steps, s.size());
    smooth.push_back(std::move(s));
  }
  if (!(ymax > ymin)) ymax = ymin + 1;
  const auto px = [&](double x) { return left + width * x / static_cast<double>(steps); };
  const auto py = [&](double y) { return top + height - height * (y - ymin) / (ymax - ymin); };
  svg.text(left + width / 2, 24, "training loss (mean of the last 10 steps), nats/char",
           {.size = 13, .anchor = "middle"});
  svg.line(left, top + height, left + width, top + height, "#444");
  svg.line(left, top, left, top + height, "#444");
  for (int t = 0; t <= 4; ++t) {
    const double y = ymin + (ymax - ymin) * t / 4;
    svg.line(left, py(y), left + width, py(y), "#eee");
    svg.text(left - 4, py(y) + 4, format_fixed(y, 2), {.size = 10, .anchor = "end"});
    const double x = static_cast<double>(steps) * t / 4;
    svg.text(px(x), top + height + 16, format_fixed(x, 0), {.anchor = "middle"});
  }
  svg.text(left + width / 2, top + height + 34, "step", {.anchor = "middle"});
  for (size_t k = 0; k < curves.size(); ++k) {
    std::vector<std::pair<double, double>> pts;
    for (size_t i = 0; i < smooth[k].size(); ++i) {
      if (std::isfinite(smooth[k][i]))
        pts.emplace_back(px(static_cast<double>(i)), py(smooth[k][i]));
    }
    svg.polyline(pts, curves[k].colour);
    svg.text(left + width + 10, top + 14 + 16 * static_cast<double>(k), curves[k].name,
             {.fill = curves[k].colour});
  }
  svg.write(path);
}

void fp16_table(const MemoryBenchOptions& o, std::ostream& out) {
  MemoryTrainingOptions t;
  if (!o.data.empty()) t.data = o.data;
  t.steps = o.curve_steps;
  t.layers = o.layers;
  t.heads = o.heads;
  t.hidden = o.hidden;
  t.batch_size = 32;
  t.seq_len = 64;
  t.eval_every = 0;
  t.eval_batches = 4;
  t.sample = 0;
  t.growth_interval = 50;
  const TextSplit text = load_fortunes(t.data);
  struct Run {
    std::string precision, loss_scale, name, colour;
  };
  const std::vector<Run> runs = {{"fp32", "dynamic", "fp32", "#222222"},
                                 {"bf16", "dynamic", "bf16", "#1f77b4"},
                                 {"fp16", "dynamic", "fp16 + GradScaler", "#2ca02c"},
                                 {"fp16", "none", "fp16 unscaled", "#d62728"}};
  out << "\n# Table 5: 16-bit training, " << t.steps << " steps of B " << t.batch_size << " x S "
      << t.seq_len << " on fortunes, one initialisation and batch order\n";
  BenchTable table({{"run", 18},
                    {"val loss", 9},
                    {"skipped", 8},
                    {"final scale", 12},
                    {"flushed", 9},
                    {"of nonzero", 11}});
  table.print_header(out);
  // After the fp32 run: one batch's gradients of the trained model, in float32, and what
  // fp16 would make of them, unscaled and at 2^16.
  struct FlushRow {
    std::string what;
    FlushCount unscaled, scaled;
  };
  std::vector<FlushRow> flush_rows;
  const auto count_trained = [&](Gpt& model) {
    const std::vector<int32_t> tokens = CharTokenizer(text.train).encode(text.validation);
    Rng rng(3);
    const TokenBatch b = random_batch(tokens, t.batch_size, t.seq_len, rng);
    const std::vector<Variable> params = model.parameters();
    for (const Variable& p : params) p.zero_grad();
    const Variable logits = model.forward(Variable(b.inputs));
    // dL/dlogits of the mean cross-entropy: (softmax(row) - onehot(target)) / rows.
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    Tensor dlogits = Tensor::empty({rows, vocab});
    for (int64_t i = 0; i < rows; ++i) {
      const float* z = logits.data().data() + i * vocab;
      float* d = dlogits.data() + i * vocab;
      const float top = *std::max_element(z, z + vocab);
      double total = 0;
      for (int64_t j = 0; j < vocab; ++j) total += std::exp(static_cast<double>(z[j] - top));
      for (int64_t j = 0; j < vocab; ++j) {
        const double p = std::exp(static_cast<double>(z[j] - top)) / total;
        const double onehot = j == static_cast<int64_t>(b.targets.data()[i]) ? 1.0 : 0.0;
        d[j] = static_cast<float>((p - onehot) / static_cast<double>(rows));
      }
    }
    cross_entropy(logits, b.targets).backward();
    std::vector<Tensor> grads;
    for (const Variable& p : params) {
      if (p.grad().defined()) grads.push_back(p.grad());
    }
    flush_rows.push_back({"dL/dlogits", count_flushed({dlogits}, Precision::fp16, 1.0f),
                          count_flushed({dlogits}, Precision::fp16, 65536.0f)});
    flush_rows.push_back({"parameter grads", count_flushed(grads, Precision::fp16, 1.0f),
                          count_flushed(grads, Precision::fp16, 65536.0f)});
  };
  std::vector<Curve> curves;
  for (const Run& r : runs) {
    MemoryTrainingOptions run = t;
    run.precision = r.precision;
    run.loss_scale = r.loss_scale;
    FlushCount flushed;
    MemoryRunResult result;
    try {
      result = train_in_precision(run, text, nullptr, &flushed,
                                  r.precision == "fp32" ? std::function<void(Gpt&)>(count_trained)
                                                        : std::function<void(Gpt&)>());
    } catch (const ScaleCollapse& e) {
      table.add_note(r.name + ": " + e.detail(), &out);
      continue;
    }
    table.add_row({r.name, format_fixed(result.training.final_loss, 4),
                   std::to_string(result.training.skipped_steps),
                   result.final_scale > 0 ? format_fixed(result.final_scale, 0) : "-",
                   std::to_string(flushed.flushed), std::to_string(flushed.nonzero)},
                  &out);
    curves.push_back({r.name, r.colour, result.training.train_losses});
  }
  table.add_note(
      "flushed: gradient elements rounded to 0 by the 16-bit rounding (after the "
      "scale), over all steps, of those nonzero in float32",
      &out);
  table.write_csv(o.out_dir + "/lesson18_fp16.csv");
  out << "\n# Table 5b: the trained fp32 model's gradients on one batch of B " << t.batch_size
      << " x S " << t.seq_len << ", rounded to fp16 (elements nonzero in float32)\n";
  BenchTable flush({{"gradient", 16},
                    {"nonzero", 9},
                    {"flushed", 9},
                    {"flushed %", 10},
                    {"at 2^16", 9},
                    {"at 2^16 %", 10},
                    {"inf at 2^16", 12}});
  flush.print_header(out);
  for (const FlushRow& r : flush_rows) {
    flush.add_row(
        {r.what, std::to_string(r.unscaled.nonzero), std::to_string(r.unscaled.flushed),
         format_fixed(100 * r.unscaled.flushed_fraction(), 3), std::to_string(r.scaled.flushed),
         format_fixed(100 * r.scaled.flushed_fraction(), 3), std::to_string(r.scaled.overflow)},
        &out);
  }
  flush.write_csv(o.out_dir + "/lesson18_flush.csv");
  write_loss_svg(curves, o.out_dir + "/lesson18_loss.svg");
  out << "# wrote " << o.out_dir << "/lesson18_loss.svg\n";
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
  fp16_table(o, out);
  if (differ > 0) {
    return Verdict::fail(std::to_string(differ) +
                         " row(s) of table 1: the ledger differs from "
                         "the formula");
  }
  return Verdict::pass("every ledger count equals its formula; tables in " + o.out_dir);
}

}  // namespace course
