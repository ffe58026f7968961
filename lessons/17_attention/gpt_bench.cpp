// gpt_bench.cpp: lesson 17, given: the benchmark of gpt_bench.h: the attention table, the
// training table, their CSV and the SVG.
#include "gpt_bench.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <thread>

#include "adamw.h"
#include "attention.h"
#include "attention_op.h"
#include "bench_stats.h"
#include "bench_table.h"
#include "clock.h"
#include "error.h"
#include "gpt.h"
#include "grad_clip.h"
#include "ops.h"
#include "output_file.h"
#include "rng.h"
#include "saved_tensors.h"
#include "svg_canvas.h"
#include "tensor_ops.h"

namespace course {

namespace {

using Clock = std::chrono::steady_clock;

// The median of `runs` calls of `f` after one untimed call (which warms the caches and
// the allocator), in seconds.
double median_seconds(int runs, const std::function<void()>& f) {
  f();
  std::vector<double> times;
  for (int i = 0; i < std::max(runs, 1); ++i) {
    const auto start = Clock::now();
    f();
    times.push_back(seconds_since(start));
  }
  return median(std::move(times));
}

// Values that depend on the position and the problem, in [-1, 1): no two rows alike.
std::vector<float> varied(int64_t n, int salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + salt));
  }
  return v;
}

struct AttentionRow {
  bool tiled = false;
  int64_t seq = 0;
  double fwd = 0, bwd = 0;  // seconds
  AttentionSavedBytes saved;
  int64_t per_row = 0;  // P's or lse's bytes
};

AttentionRow time_attention(const GptBenchOptions& o, bool tiled, int64_t seq) {
  const AttentionShape shape{
      .batch_heads = o.batch * o.heads, .seq = seq, .head_dim = o.head_dim, .causal = true};
  const int64_t n = shape.batch_heads * seq * o.head_dim;
  const std::vector<float> q = varied(n, 1), k = varied(n, 2), v = varied(n, 3),
                           dout = varied(n, 4);
  std::vector<float> out(static_cast<size_t>(n)), dq(out.size()), dk(out.size()), dv(out.size());
  std::vector<float> p(tiled ? 0 : static_cast<size_t>(shape.batch_heads * seq * seq));
  std::vector<float> lse(tiled ? static_cast<size_t>(shape.batch_heads * seq) : 0);
  const AttentionTiles tiles;
  AttentionRow row;
  row.tiled = tiled;
  row.seq = seq;
  if (tiled) {
    row.fwd = median_seconds(o.repeats, [&] {
      attention_tiled_forward(shape, tiles, q.data(), k.data(), v.data(), out.data(), lse.data());
    });
    row.bwd = median_seconds(o.repeats, [&] {
      attention_tiled_backward(shape, tiles, q.data(), k.data(), v.data(), out.data(), lse.data(),
                               dout.data(), dq.data(), dk.data(), dv.data());
    });
  } else {
    row.fwd = median_seconds(o.repeats, [&] {
      attention_naive_forward(shape, q.data(), k.data(), v.data(), out.data(), p.data());
    });
    row.bwd = median_seconds(o.repeats, [&] {
      attention_naive_backward(shape, q.data(), k.data(), v.data(), p.data(), dout.data(),
                               dq.data(), dk.data(), dv.data());
    });
  }
  row.saved = measure_attention_saved_bytes(tiled, o.batch, o.heads, seq, o.head_dim);
  row.per_row = 4 * shape.batch_heads * (tiled ? seq : seq * seq);
  return row;
}

// One panel of the SVG: y against S, both on log2 axes, a polyline per series.
struct Series {
  std::string name, colour;
  std::vector<std::pair<double, double>> points;  // (S, y)
};

void draw_panel(SvgCanvas& svg, double left, const std::string& title, const std::string& unit,
                const std::vector<Series>& series) {
  const double top = 40, width = 300, height = 220;
  double xmin = 1e300, xmax = 0, ymin = 1e300, ymax = 0;
  for (const Series& s : series) {
    for (const auto& [x, y] : s.points) {
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  }
  if (xmax <= 0 || ymax <= 0) return;
  ymin = std::pow(2.0, std::floor(std::log2(ymin))),
  ymax = std::pow(2.0, std::ceil(std::log2(ymax)));
  const double lx = std::max(std::log2(xmax / xmin), 1.0),
               ly = std::max(std::log2(ymax / ymin), 1.0);
  const auto px = [&](double x) { return left + width * std::log2(x / xmin) / lx; };
  const auto py = [&](double y) { return top + height - height * std::log2(y / ymin) / ly; };
  svg.text(left + width / 2, 24, title, {.size = 13, .anchor = "middle"});
  svg.line(left, top + height, left + width, top + height, "#444");
  svg.line(left, top, left, top + height, "#444");
  // Ticks at powers of two: every one on S's axis, every 4th (or 16th) on y's.
  for (int e = 0; e <= static_cast<int>(std::lround(lx)); ++e) {
    const double x = xmin * std::exp2(e);
    svg.line(px(x), top + height, px(x), top + height + 4, "#444");
    svg.text(px(x), top + height + 16, format_fixed(x, 0), {.anchor = "middle"});
  }
  for (int e = 0; e <= static_cast<int>(std::lround(ly)); e += (ly > 12 ? 4 : 2)) {
    const double y = ymin * std::exp2(e);
    svg.line(left, py(y), left + width, py(y), "#eee");
    svg.text(left - 4, py(y) + 4, y >= 1 ? format_fixed(y, 0) : format_fixed(y, 3),
             {.size = 10, .anchor = "end"});
  }
  svg.text(left + width / 2, top + height + 32, "S (tokens)", {.anchor = "middle"});
  svg.text(left - 44, top + height / 2, unit, {.anchor = "middle", .rotate_degrees = -90});
  double legend = top + 14;
  for (const Series& s : series) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& [x, y] : s.points) pts.emplace_back(px(x), py(y));
    svg.polyline(pts, s.colour);
    for (const auto& [x, y] : pts) svg.circle(x, y, 3, s.colour);
    svg.text(left + 10, legend, s.name, {.fill = s.colour});
    legend += 16;
  }
}

void write_svg(const std::vector<AttentionRow>& rows, const std::string& path) {
  std::map<bool, Series> time, bytes;
  time[false] = {"naive fwd+bwd", "#d62728", {}};
  time[true] = {"tiled fwd+bwd", "#1f77b4", {}};
  bytes[false] = {"naive: q, k, v, P", "#d62728", {}};
  bytes[true] = {"tiled: q, k, v, o, lse", "#1f77b4", {}};
  for (const AttentionRow& r : rows) {
    const auto s = static_cast<double>(r.seq);
    time[r.tiled].points.emplace_back(s, 1e3 * (r.fwd + r.bwd));
    bytes[r.tiled].points.emplace_back(s, static_cast<double>(r.saved.ledger) / 1024.0);
  }
  SvgCanvas svg(760, 320);
  draw_panel(svg, 70, "causal attention, forward + backward", "ms", {time[false], time[true]});
  draw_panel(svg, 440, "bytes kept for backward, one layer", "KiB", {bytes[false], bytes[true]});
  svg.write(path);
}

// "2 cores, load average 1.23 0.98 0.50": how busy the machine was when it ran.
std::string machine_line() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return std::to_string(std::thread::hardware_concurrency()) + " cores, load average " + one + " " +
         five + " " + fifteen;
}

// Table 3: what the training step's graph keeps for backward, by node, for both kinds.
void print_ledgers(const std::map<std::string, SavedTensorLedger>& ledgers, std::ostream& out,
                   const std::string& csv_path) {
  std::map<std::string, std::pair<int64_t, int64_t>> by_node;  // node -> (naive, tiled)
  std::map<std::string, int64_t> count;
  for (const auto& [kind, ledger] : ledgers) {
    for (const SavedTensorRow& r : ledger.by_node) {
      auto& cell = by_node[r.node];
      (kind == "naive" ? cell.first : cell.second) += r.bytes;
      count[r.node] = std::max(count[r.node], r.count);
    }
  }
  out << "\n# saved for backward by the training step, by node (the ledger from the loss)\n";
  BenchTable table({{"node", 28}, {"nodes", 6}, {"naive(B)", 11}, {"tiled(B)", 11}});
  table.print_header(out);
  for (const auto& [node, bytes] : by_node) {
    table.add_row({node, std::to_string(count[node]), std::to_string(bytes.first),
                   std::to_string(bytes.second)},
                  &out);
  }
  table.add_row({"total", "", std::to_string(ledgers.at("naive").total_bytes),
                 std::to_string(ledgers.at("tiled").total_bytes)},
                &out);
  table.write_csv(csv_path);
}

}  // namespace

int64_t attention_saved_bytes_formula(bool tiled, int64_t batch_heads, int64_t seq,
                                      int64_t head_dim) {
  const int64_t qkv = 4 * batch_heads * seq * head_dim;  // one of q, k, v, o
  return tiled ? 4 * qkv + 4 * batch_heads * seq : 3 * qkv + 4 * batch_heads * seq * seq;
}

AttentionSavedBytes measure_attention_saved_bytes(bool tiled, int64_t batch, int64_t heads,
                                                  int64_t seq, int64_t head_dim) {
  const Shape shape{batch, heads, seq, head_dim};
  const int64_t n = batch * heads * seq * head_dim;
  const auto input = [&](int salt) {
    return Variable(Tensor::from_vector(shape, varied(n, salt)), /*requires_grad=*/true);
  };
  const Variable q = input(1), k = input(2), v = input(3);
  const Variable o =
      causal_self_attention(q, k, v, tiled ? AttentionKind::tiled : AttentionKind::naive);
  return {saved_tensor_ledger(o).total_bytes,
          attention_saved_bytes_formula(tiled, batch * heads, seq, head_dim)};
}

Verdict run_gpt_bench(const GptBenchOptions& o, std::ostream& out) {
  openblas_set_num_threads(1);
  const auto file = [&](const std::string& name) { return output_beside(o.csv_path, name); };
  ensure_parent_directory(o.csv_path);

  // ---- Table 1: naive against tiled attention -------------------------------------
  out << "# machine: " << machine_line() << "\n";
  out << "# causal attention, B " << o.batch << ", " << o.heads << " heads, d " << o.head_dim
      << ", float, one thread; median of " << o.repeats << " runs; tiles "
      << AttentionTiles{}.block_q << " x " << AttentionTiles{}.block_k << "\n"
      << "# saved: bytes causal_self_attention keeps for backward, counted by the ledger;\n"
      << "# formula: naive 3 x 4nSd + 4nS^2 (q, k, v, P), tiled 4 x 4nSd + 4nS (q, k, v, o, "
         "lse), n = B heads\n";
  BenchTable table({{"S", 6},
                    {"kind", 6},
                    {"fwd(ms)", 9},
                    {"bwd(ms)", 9},
                    {"saved(B)", 11},
                    {"formula(B)", 11},
                    {"P|lse(B)", 10},
                    {"naive/tiled", 12}});
  table.print_header(out);
  std::vector<AttentionRow> rows;
  bool exact = true;
  for (const int64_t seq : o.seq_lens) {
    const AttentionRow naive = time_attention(o, false, seq);
    const AttentionRow tiled = time_attention(o, true, seq);
    for (const AttentionRow* r : {&naive, &tiled}) {
      exact = exact && r->saved.ledger == r->saved.formula;
      table.add_row(
          {std::to_string(seq), r->tiled ? "tiled" : "naive", format_fixed(1e3 * r->fwd, 3),
           format_fixed(1e3 * r->bwd, 3), std::to_string(r->saved.ledger),
           std::to_string(r->saved.formula), std::to_string(r->per_row),
           r->tiled ? format_fixed(static_cast<double>(naive.saved.ledger) /
                                       static_cast<double>(tiled.saved.ledger),
                                   1) +
                          " (" +
                          format_fixed(static_cast<double>(naive.per_row) /
                                           static_cast<double>(tiled.per_row),
                                       0) +
                          ")"
                    : ""},
          &out);
    }
    rows.push_back(naive);
    rows.push_back(tiled);
  }
  table.add_note("naive/tiled: all saved bytes (P against lse alone in parentheses)", &out);
  table.write_csv(file("attention.csv"));
  write_svg(rows, file("attention.svg"));

  // ---- Table 2: the training step -------------------------------------------------
  GptConfig base;
  base.vocab = o.vocab;
  base.context = o.train_seq;
  base.layers = o.layers;
  base.heads = o.train_heads;
  base.hidden = o.hidden;
  if (const std::string problem = base.problem(); !problem.empty()) throw ConfigError(problem);
  const int64_t n_params = gpt_parameter_count(base);
  const int64_t n_matmul = n_params - (o.vocab + o.train_seq) * o.hidden;  // not wte, wpe
  const double tokens = static_cast<double>(o.train_batch * o.train_seq);
  const double flops_per_token = 6.0 * static_cast<double>(n_matmul) +
                                 12.0 * static_cast<double>(o.layers * o.train_seq * o.hidden);
  // The machine's rate: a square sgemm of n = 4H, the MLP's width.
  const int64_t m = 4 * o.hidden;
  const Tensor a = Tensor::from_vector({m, m}, varied(m * m, 5));
  const Tensor b = Tensor::from_vector({m, m}, varied(m * m, 6));
  const Tensor c = Tensor::zeros({m, m});
  // Measured again before each row, so that a row is compared with the machine as it was
  // (other work on a shared machine moves both).
  const auto sgemm_rate = [&] {
    const int calls = 20;
    const double t = median_seconds(5, [&] {
      for (int i = 0; i < calls; ++i) gemm(a, false, b, false, 1.0f, 0.0f, c);
    });
    return 2.0 * static_cast<double>(m * m * m) * calls / t;
  };

  Rng rng(17);
  std::vector<float> ids(static_cast<size_t>(o.train_batch * o.train_seq));
  std::vector<float> next(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<float>(rng.next_u32() % static_cast<uint32_t>(o.vocab));
    next[i] = static_cast<float>(rng.next_u32() % static_cast<uint32_t>(o.vocab));
  }
  const Tensor ids_t = Tensor::from_vector({o.train_batch, o.train_seq}, ids);
  const Tensor targets = Tensor::from_vector({o.train_batch * o.train_seq}, next);
  out << "\n# training step: L " << o.layers << ", H " << o.hidden << ", " << o.train_heads
      << " heads, V " << o.vocab << ", N = " << n_params << " parameters, "
      << "B " << o.train_batch << " x S " << o.train_seq << " tokens, AdamW, clip 1.0, one "
      << "thread; median of " << o.train_steps << " steps\n"
      << "# flops per token = 6 N' + 12 L S H = " << format_fixed(flops_per_token / 1e6, 3)
      << " M (PaLM's accounting: N' = " << n_matmul << ", every parameter but wte and wpe; "
      << "the full S x S, no recomputation)\n"
      << "# of sgemm: against a square sgemm of " << m << " (4H, tensor_ops.h's gemm) "
      << "measured just before the row\n";
  BenchTable training({{"kind", 6},
                       {"step(ms)", 10},
                       {"tokens/s", 10},
                       {"GFLOP/s", 9},
                       {"sgemm GF/s", 11},
                       {"of sgemm", 9},
                       {"saved(B)", 11}});
  training.print_header(out);
  std::map<std::string, SavedTensorLedger> ledgers;
  for (const AttentionKind kind : {AttentionKind::naive, AttentionKind::tiled}) {
    GptConfig config = base;
    config.attention = kind;
    Rng init(1);
    Gpt model(config, init);
    AdamW optimizer(model.parameters(), {.lr = 1e-3, .beta2 = 0.95, .weight_decay = 0.1},
                    decay_matrices(model.parameters()));
    SavedTensorLedger& ledger = ledgers[attention_kind_name(kind)];
    const double peak = sgemm_rate();
    const double step = median_seconds(o.train_steps, [&] {
      optimizer.zero_grad();
      const Variable loss = cross_entropy(model.forward(Variable(ids_t)), targets);
      if (ledger.total_bytes == 0) ledger = saved_tensor_ledger(loss);  // the untimed call
      loss.backward();
      clip_grad_norm(model.parameters(), 1.0);
      optimizer.step();
    });
    const double rate = tokens * flops_per_token / step;
    training.add_row(
        {attention_kind_name(kind), format_fixed(1e3 * step, 2), format_fixed(tokens / step, 0),
         format_fixed(rate / 1e9, 2), format_fixed(peak / 1e9, 2),
         format_fixed(100.0 * rate / peak, 1) + "%", std::to_string(ledger.total_bytes)},
        &out);
  }
  training.add_note(
      "saved: every tensor the step's graph keeps for backward (the ledger, "
      "from the loss), each storage once",
      &out);
  training.write_csv(file("training.csv"));
  print_ledgers(ledgers, out, file("saved.csv"));
  out << "# files: " << file("attention.csv") << ", " << file("attention.svg") << ", "
      << file("training.csv") << ", " << file("saved.csv") << "\n";
  if (!exact) return Verdict::fail("a ledger count differs from its formula (table 1)");
  return Verdict::pass("every ledger count equals its formula");
}

}  // namespace course
