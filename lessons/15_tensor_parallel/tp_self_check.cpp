// tp_self_check.cpp: lesson 15, given: the self-check of tp_self_check.h.
#include "tp_self_check.h"

#include <cmath>
#include <sstream>

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

std::string check_loss(ProcessGroup& tp) {
  const int T = tp.size(), t = tp.rank();
  const int64_t B = 6, C = 10, Cp = padded_classes(C, T), n = Cp / T;
  const Tensor full = pattern(B, C, 9);
  std::vector<float> targets(B);
  for (int64_t i = 0; i < B; ++i) targets[i] = static_cast<float>((i * 7 + 3) % C);
  const Tensor y = Tensor::from_vector({B}, targets);
  // This rank's columns, padded columns filled with large values the loss must ignore.
  Tensor mine = Tensor::full({B, n}, 50.0f);
  for (int64_t i = 0; i < B; ++i) {
    for (int64_t c = 0; c < n && t * n + c < C; ++c) {
      mine.data()[i * n + c] = full.data()[i * C + t * n + c];
    }
  }
  Variable z(mine, true);
  Variable loss = vocab_parallel_cross_entropy(z, y, C, tp);
  Variable zs(full, true);
  Variable want = cross_entropy(zs, y);
  std::string p = compare("vocab_parallel_cross_entropy: the loss (padded columns must be masked)",
                          loss.data(), want.data());
  loss.backward();
  want.backward();
  if (p.empty()) {
    Tensor expected = Tensor::zeros({B, n});
    for (int64_t i = 0; i < B; ++i) {
      for (int64_t c = 0; c < n && t * n + c < C; ++c) {
        expected.data()[i * n + c] = zs.grad().data()[i * C + t * n + c];
      }
    }
    p = compare("VocabParallelCrossEntropyBackward::apply: the logits' gradient", z.grad(),
                expected);
  }
  return p;
}

}  // namespace

std::string run_lesson15_self_check(ProcessGroup& tp) {
  std::string p = on_every_rank(tp, [&] { return check_operators(tp); });
  if (p.empty()) p = on_every_rank(tp, [&] { return check_layers(tp); });
  if (p.empty()) p = on_every_rank(tp, [&] { return check_loss(tp); });
  return p;
}

}  // namespace course
