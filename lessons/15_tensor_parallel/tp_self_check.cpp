// tp_self_check.cpp: lesson 15, given: the self-check of tp_self_check.h.
#include "tp_self_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "error.h"
#include "ops.h"
#include "parallel_linear.h"
#include "sync_check.h"
#include "tensor_ops.h"
#include "tp_ops.h"
#include "vocab_parallel_loss.h"

namespace course {

const char* const kLesson15SelfCheckPassed =
    "self-check: f/g operators, gather/scatter, column- and row-parallel layers and the "
    "vocabulary-parallel loss match the serial oracles";

namespace {

// A [rows, cols] tensor whose entries depend on the index and on `salt` (a rank, or a
// constant for tensors every rank holds the same), small and not symmetric.
Tensor pattern(int64_t rows, int64_t cols, int salt) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(salt) * 5) % 23) - 11) /
           8.0f;
  }
  return Tensor::from_vector({rows, cols}, v);
}

// "" when a and b agree to `tol`, else "<what>: element i is a, expected b".
std::string compare(const std::string& what, const Tensor& got, const Tensor& want,
                    float tol = 1e-4f) {
  if (!got.defined() || got.numel() != want.numel()) {
    return what + ": " + (got.defined() ? shape_str(got.shape()) : std::string("no tensor")) +
           ", expected " + shape_str(want.shape());
  }
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::fabs(g[i] - w[i]) <= tol * (1 + std::fabs(w[i])))) {
      std::ostringstream s;
      s << what << ": element " << i << " is " << g[i] << ", expected " << w[i];
      return s.str();
    }
  }
  return "";
}

// Runs `check` (a collective), then agrees on the first problem of any rank.
template <typename F>
std::string on_every_rank(ProcessGroup& tp, F check) {
  std::string problem;
  try {
    problem = check();
  } catch (const NotImplementedError&) {
    throw;
  } catch (const Error& e) {
    problem = e.what();
  }
  return first_problem_on_any_rank(problem, tp);
}

std::string check_operators(ProcessGroup& tp) {
  const int T = tp.size(), t = tp.rank();
  const int64_t B = 3, n = 4;
  // f: identity forward; backward sums the seeds (rank-dependent) over the group.
  {
    Variable x(pattern(B, n, 100), true);
    Variable y = copy_to_tp(x, tp);
    std::string p = compare("copy_to_tp: forward (must be x unchanged)", y.data(), x.data());
    y.backward(pattern(B, n, t));
    Tensor want = pattern(B, n, 0);
    for (int r = 1; r < T; ++r) want = add(want, pattern(B, n, r));
    if (p.empty()) {
      p = compare("CopyToTpBackward::apply: the gradient (must be the sum of every rank's)",
                  x.grad(), want);
    }
    if (!p.empty()) return p;
  }
  // g: forward sums x over the group; backward passes the seed unchanged.
  {
    Variable x(pattern(B, n, t), true);
    Variable y = reduce_from_tp(x, tp);
    Tensor want = pattern(B, n, 0);
    for (int r = 1; r < T; ++r) want = add(want, pattern(B, n, r));
    std::string p = compare("reduce_from_tp: forward (must be the sum over ranks)", y.data(), want);
    if (p.empty()) {
      p = compare("reduce_from_tp: the input was changed (all-reduce a copy of x, not x)", x.data(),
                  pattern(B, n, t));
    }
    y.backward(pattern(B, n, 200));
    if (p.empty()) {
      p = compare("ReduceFromTpBackward::apply: the gradient (must be the seed unchanged)",
                  x.grad(), pattern(B, n, 200));
    }
    if (!p.empty()) return p;
  }
  // gather: rank r's [B, n] in columns [r*n, r*n + n); backward keeps this rank's columns.
  {
    Variable x(pattern(B, n, t), true);
    Variable y = gather_from_tp(x, tp);
    std::string p;
    for (int r = 0; r < T && p.empty(); ++r) {
      if (y.dim() != 2 || y.size(1) != n * T) {
        p = "gather_from_tp: forward gave " + shape_str(y.shape()) + ", expected [3, " +
            std::to_string(n * T) + "]";
        break;
      }
      p = compare("gather_from_tp: forward, the columns of rank " + std::to_string(r),
                  column_slice(y.data(), r * n, n), pattern(B, n, r));
    }
    if (p.empty()) {
      // The node alone first: a gradient of the wrong shape would otherwise stop autograd
      // (AccumulateGrad) before the gradient could be named.
      GatherFromTpBackward node;
      node.tp = &tp;
      const std::vector<Tensor> g = node.apply(pattern(B, n * T, 300));
      if (g.size() != 1 || !g[0].defined() || g[0].dim() != 2 || g[0].size(1) != n) {
        p = "GatherFromTpBackward::apply: returned " +
            (g.size() == 1 && g[0].defined() ? shape_str(g[0].shape()) : std::string("nothing")) +
            " for an input of [3, " + std::to_string(n) + "]: return this rank's slice of g " +
            "(its columns [t*n, t*n + n)), not the whole gradient";
      }
    }
    if (p.empty()) {
      y.backward(pattern(B, n * T, 300));
      p = compare("GatherFromTpBackward::apply: the gradient (must be this rank's columns)",
                  x.grad(), column_slice(pattern(B, n * T, 300), t * n, n));
    }
    if (!p.empty()) return p;
  }
  // scatter: this rank's columns; backward all-gathers the slices' gradients.
  {
    Variable x(pattern(B, n * T, 400), true);
    Variable y = scatter_to_tp(x, tp);
    std::string p = compare("scatter_to_tp: forward (must be this rank's columns)", y.data(),
                            column_slice(x.data(), t * n, n));
    if (p.empty()) {
      y.backward(pattern(B, n, t + 50));
      for (int r = 0; r < T && p.empty(); ++r) {
        if (!x.grad().defined() || x.grad().numel() != B * n * T) {
          p = "ScatterToTpBackward::apply: the gradient must be [3, " + std::to_string(n * T) + "]";
          break;
        }
        p = compare(
            "ScatterToTpBackward::apply: the gradient's columns of rank " + std::to_string(r),
            column_slice(x.grad(), r * n, n), pattern(B, n, r + 50));
      }
    }
    if (!p.empty()) return p;
  }
  return "";
}

std::string check_layers(ProcessGroup& tp) {
  const int T = tp.size(), t = tp.rank();
  const int64_t B = 3;
  for (bool gather : {false, true}) {
    const int64_t in = 5, out = 3 * T;
    const Tensor w = pattern(out, in, 1), b = pattern(1, out, 2).reshape({out});
    ColumnParallelLinear layer(w, b, tp, gather);
    Variable x(pattern(B, in, 3), true);
    Variable y = layer.forward(x);
    Variable xs(pattern(B, in, 3), true), ws(w, true), bs(b, true);
    Variable ys = linear(xs, ws, bs);
    const std::string name =
        std::string("ColumnParallelLinear::forward") + (gather ? " (gather_output)" : "");
    std::string p = compare(name + ": the output", y.data(),
                            gather ? ys.data() : column_slice(ys.data(), t * 3, 3));
    // f and g swapped: g's forward sums x over the group, T * x, where f passes x through.
    if (!p.empty() && T > 1) {
      const Tensor summed = linear(Variable(scale(pattern(B, in, 3), static_cast<float>(T))),
                                   Variable(w), Variable(b))
                                .data();
      if (compare("", y.data(), gather ? summed : column_slice(summed, t * 3, 3)).empty()) {
        p = name + ": the output is that of the input summed over the " + std::to_string(T) +
            " ranks: copy_to_tp (f) and reduce_from_tp (g) may be swapped: f is the identity " +
            "forward and all-reduce backward, and it is f that the input enters by";
      }
    }
    // The loss sum(y * seed): the same seed on every rank for the whole output.
    const Tensor seed = pattern(B, out, 4);
    y.backward(gather ? seed : column_slice(seed, t * 3, 3));
    ys.backward(seed);
    if (p.empty()) {
      p = compare(name + ": the weight's gradient", layer.weight().grad(),
                  ws.grad().rows(t * 3, 3));
    }
    if (p.empty()) {
      p = compare(name + ": the input's gradient (every rank's part summed: f's backward)",
                  x.grad(), xs.grad());
    }
    if (!p.empty()) return p;
  }
  for (bool parallel : {true, false}) {
    const int64_t in = 2 * T, out = 5;
    const Tensor w = pattern(out, in, 5), b = pattern(1, out, 6).reshape({out});
    RowParallelLinear layer(w, b, tp, parallel);
    const Tensor full_x = pattern(B, in, 7);
    Variable x(parallel ? column_slice(full_x, t * 2, 2) : full_x, true);
    Variable y = layer.forward(x);
    Variable xs(full_x, true), ws(w, true), bs(b, true);
    Variable ys = linear(xs, ws, bs);
    const std::string name = std::string("RowParallelLinear::forward") +
                             (parallel ? "" : " (input not parallel: scattered)");
    std::string p;
    if (T > 1 &&
        compare("", y.data(), add_rows(ys.data(), scale(b, static_cast<float>(T - 1)))).empty()) {
      p = name +
          ": the bias was added on every rank before the all-reduce (T times); add it "
          "once, after reduce_from_tp";
    }
    if (p.empty()) p = compare(name + ": the output (the same on every rank)", y.data(), ys.data());
    // g left out or replaced by f: the output is this rank's partial sum plus the bias.
    if (!p.empty() && T > 1) {
      const Variable partial(column_slice(full_x, t * 2, 2));
      const Tensor part = linear(partial, Variable(column_slice(w, t * 2, 2)), Variable(b)).data();
      if (compare("", y.data(), part).empty()) {
        p = name + ": the output is this rank's partial sum alone: reduce_from_tp (g) must sum " +
            "the partial products over the group (all-reduce forward, identity backward); " +
            "copy_to_tp (f) and reduce_from_tp (g) may be swapped";
      }
    }
    const Tensor seed = pattern(B, out, 8);
    y.backward(seed);
    ys.backward(seed);
    if (p.empty()) {
      p = compare(name + ": the weight's gradient", layer.weight().grad(),
                  column_slice(ws.grad(), t * 2, 2));
    }
    if (p.empty()) p = compare(name + ": the bias's gradient", layer.bias().grad(), bs.grad());
    if (p.empty()) {
      p = compare(name + ": the input's gradient", x.grad(),
                  parallel ? column_slice(xs.grad(), t * 2, 2) : xs.grad());
    }
    if (!p.empty()) return p;
  }
  return "";
}

// The loss, in double on the full logits, as a rank that uses only its own row maximum
// (`local_max`: the MAX all-reduce left out) or lets the padded columns take part
// (`!masked`) would compute it. `columns`: every rank's [B, n] columns, padding included.
double loss_as_computed(const std::vector<Tensor>& columns, const Tensor& targets, int64_t C,
                        bool local_max, bool masked) {
  const int T = static_cast<int>(columns.size());
  const int64_t B = targets.numel(), n = columns[0].size(1);
  const auto used = [&](int t, int64_t c) { return !masked || t * n + c < C; };
  double total = 0;
  for (int64_t i = 0; i < B; ++i) {
    std::vector<double> m(static_cast<size_t>(T), -1e300);
    for (int t = 0; t < T; ++t) {
      for (int64_t c = 0; c < n; ++c) {
        if (used(t, c)) m[t] = std::max(m[t], static_cast<double>(columns[t].data()[i * n + c]));
      }
    }
    const double global = *std::max_element(m.begin(), m.end());
    double s = 0, p = 0;
    const auto y = static_cast<int64_t>(targets.data()[i]);
    for (int t = 0; t < T; ++t) {
      const double mt = local_max ? m[t] : global;
      for (int64_t c = 0; c < n; ++c) {
        const double z = columns[t].data()[i * n + c];
        if (used(t, c)) s += std::exp(z - mt);
        if (t * n + c == y) p = z - mt;
      }
    }
    total += std::log(s) - p;
  }
  return total / static_cast<double>(B);
}

// One case of the loss: `full` [B, C] cut into every rank's columns, the padded ones set to
// `padding`; the loss and its gradient against lesson 06's cross_entropy on `full`. A
// wrong loss is named by its cause where it is one of the usual ones.
std::string check_loss_case(ProcessGroup& tp, const std::string& what, const Tensor& full,
                            const Tensor& y, float padding) {
  const int T = tp.size(), t = tp.rank();
  const int64_t B = full.size(0), C = full.size(1), n = padded_classes(C, T) / T;
  std::vector<Tensor> columns;
  for (int r = 0; r < T; ++r) {
    Tensor cols = Tensor::full({B, n}, padding);
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t c = 0; c < n && r * n + c < C; ++c) {
        cols.data()[i * n + c] = full.data()[i * C + r * n + c];
      }
    }
    columns.push_back(cols);
  }
  Variable z(columns[t], true);
  Variable loss = vocab_parallel_cross_entropy(z, y, C, tp);
  Variable zs(full, true);
  Variable want = cross_entropy(zs, y);
  const double got = loss.item(), expected = want.item();
  const auto near = [&](double a) { return std::fabs(got - a) <= 1e-4 * (1 + std::fabs(a)); };
  std::ostringstream p;
  if (!std::isfinite(got)) {
    p << "vocab_parallel_cross_entropy: the loss is " << got << " with " << what << ", expected "
      << expected << ": exp(z) overflows in float: subtract the row maximum (the MAX "
      << "all-reduce's m) before exp";
  } else if (!near(expected)) {
    p << "vocab_parallel_cross_entropy: the loss is " << got << " with " << what << ", expected "
      << expected << ": ";
    if (T > 1 && near(loss_as_computed(columns, y, C, /*local_max=*/true, /*masked=*/true))) {
      p << "each rank subtracted its own row maximum: the maximum must be the global one: the "
           "MAX all-reduce over the tensor-parallel group";
    } else if (n * T > C && near(loss_as_computed(columns, y, C, false, /*masked=*/false))) {
      p << "the padded columns took part: mask the columns c >= classes out of the maximum "
           "and the sum";
    } else {
      p << "check the sum s and the target's shifted logit p (one SUM all-reduce of [s, p])";
    }
  }
  loss.backward();
  want.backward();
  if (p.str().empty()) {
    Tensor grad = Tensor::zeros({B, n});
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t c = 0; c < n && t * n + c < C; ++c) {
        grad.data()[i * n + c] = zs.grad().data()[i * C + t * n + c];
      }
    }
    return compare("VocabParallelCrossEntropyBackward::apply: the logits' gradient with " + what,
                   z.grad(), grad);
  }
  return p.str();
}

std::string check_loss(ProcessGroup& tp) {
  const int T = tp.size();
  const int64_t B = 6, C = 10, Cp = padded_classes(C, T);
  std::vector<float> targets(B);
  for (int64_t i = 0; i < B; ++i) targets[i] = static_cast<float>((i * 7 + 3) % C);
  const Tensor y = Tensor::from_vector({B}, targets);
  // Small logits, padded columns filled with large values the loss must ignore.
  std::string p = check_loss_case(tp, "10 small logits", pattern(B, C, 9), y, 50.0f);
  if (!p.empty()) return p;
  // Large logits (exp overflows float beyond 88), each rank's columns 30 apart from the
  // next's and the largest on another rank in every row: only the global maximum works.
  Tensor large = pattern(B, C, 10);
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t rank = c / (Cp / T);
      large.data()[i * C + c] += 100.0f + 30.0f * static_cast<float>((rank + i) % T);
    }
  }
  return check_loss_case(tp, "large logits (100 and more, far apart across ranks)", large, y,
                         -1.0f);
}

}  // namespace

std::string run_lesson15_self_check(ProcessGroup& tp) {
  std::string p = on_every_rank(tp, [&] { return check_operators(tp); });
  if (p.empty()) p = on_every_rank(tp, [&] { return check_layers(tp); });
  if (p.empty()) p = on_every_rank(tp, [&] { return check_loss(tp); });
  return p;
}

}  // namespace course
