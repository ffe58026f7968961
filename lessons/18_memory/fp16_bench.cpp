// fp16_bench.cpp: lesson 18, given: table 5 of ./lesson18 --bench (fp16_bench.h).
#include "fp16_bench.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "bench_table.h"
#include "memory_training.h"
#include "mixed_precision.h"
#include "ops.h"
#include "output_file.h"
#include "svg_canvas.h"
#include "text_corpus.h"

namespace course {

namespace {

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

}  // namespace

void fp16_tables(const MemoryBenchOptions& o, std::ostream& out) {
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
  table.write_csv(output_beside(o.csv_path, "fp16.csv"));
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
  flush.write_csv(output_beside(o.csv_path, "flush.csv"));
  write_loss_svg(curves, output_beside(o.csv_path, "loss.svg"));
  out << "# wrote " << output_beside(o.csv_path, "loss.svg") << "\n";
}

}  // namespace course
