// hooks_self_check.cpp: lesson 14, given: the self-check (see hooks_self_check.h).
#include "hooks_self_check.h"

#include <cmath>
#include <sstream>

#include "comm_hooks.h"
#include "ops.h"
#include "rng.h"
#include "sync_check.h"
#include "tensor_ops.h"

namespace course {

const char* const kLesson14SelfCheckPassed =
    "self-check: fp16 and bf16 compression, Gram-Schmidt and PowerSGD (exact at full rank, "
    "error feedback over three steps) match their serial oracles";

namespace {

// ---- The self-check ------------------------------------------------------------------

// Element i of rank r's test vector on `world` ranks: rank- and index-dependent, of mixed
// signs, some large, and two kinds of element where the order of the division shows at
// any world size:
//   near fp16's limit   about 50000 on every rank: the sum overflows fp16 (65504) unless
//                       each value is divided by N before the cast;
//   subnormal means     x / N = (1.375 + 4r) * 2^-24, a subnormal of fp16 that rounds down
//                       once, where x rounded to fp16 first and then divided rounds up.
bool near_limit(size_t i) {
  return i % 89 == 1;
}
bool subnormal_mean(size_t i) {
  return i % 83 == 2;
}

float test_value(int world, int rank, size_t i) {
  if (near_limit(i)) return 50000.0f - 100.0f * static_cast<float>(rank);
  if (subnormal_mean(i)) {
    return (1.375f + 4.0f * static_cast<float>(rank)) * static_cast<float>(world) *
           std::ldexp(1.0f, -24);
  }
  return static_cast<float>((static_cast<int64_t>(i * 37 + static_cast<size_t>(rank) * 11) % 101) -
                            50) *
             0.0173f +
         static_cast<float>(rank) * 0.5f + (i % 97 == 0 ? 700.0f : 0.0f);
}

// The serial oracle of compress_and_all_reduce: every rank's x / N as `kind`, summed in
// rank order in float32, rounded once.
float compressed_mean(int world, size_t i, HalfKind kind) {
  float sum = 0;
  for (int r = 0; r < world; ++r) {
    sum += half_to_float(float_to_half(test_value(world, r, i) / static_cast<float>(world), kind),
                         kind);
  }
  return half_to_float(float_to_half(sum, kind), kind);
}

std::string check_compression(ProcessGroup& group, HalfKind kind) {
  const int world = group.size();
  const size_t n = 1031;
  Tensor buffer = Tensor::empty({static_cast<int64_t>(n)});
  for (size_t i = 0; i < n; ++i) buffer.data()[i] = test_value(world, group.rank(), i);
  compress_and_all_reduce(group, buffer, kind);
  for (size_t i = 0; i < n; ++i) {
    const float got = buffer.data()[i], want = compressed_mean(world, i, kind);
    if (got == want || (std::isnan(got) && std::isnan(want))) continue;
    std::ostringstream why;
    why << "compress_and_all_reduce (" << half_name(kind) << ", " << world << " ranks): element "
        << i << " is " << got << ", expected " << want;
    // The two orders that are not the contract, computed: cast first then divide in the
    // format (torch's order), and divide after the sum.
    float cast_first = 0, summed = 0;
    const float inv = 1.0f / static_cast<float>(world);
    for (int r = 0; r < world; ++r) {
      const float x = half_to_float(float_to_half(test_value(world, r, i), kind), kind);
      cast_first += half_to_float(float_to_half(x * inv, kind), kind);
      summed += x;
    }
    cast_first = half_to_float(float_to_half(cast_first, kind), kind);
    const float divided_after = half_to_float(float_to_half(summed, kind), kind) * inv;
    if (world > 1 && (got == divided_after || (near_limit(i) && !std::isfinite(got)))) {
      why << (near_limit(i) ? ": every rank's value is near 50000 there, and their sum "
                              "overflows fp16's 65504"
                            : "");
      why << ": divided after the all-reduce? Divide each value by N in float32 before the "
             "cast (to_halves' scale)";
    } else if (world > 1 && got == cast_first) {
      why << ": cast first and divided after? Divide in float32, then cast once "
             "(to_halves(values, 1/N)): rounding twice differs from once"
          << (subnormal_mean(i) ? " (x / N is an fp16 subnormal there)" : "");
    } else if (world > 1 &&
               std::fabs(got - want * static_cast<float>(world)) <= std::fabs(want) * 1e-2f) {
      why << ": the sum, not the mean (divide by the world size before the cast)";
    } else if (!near_limit(i) &&
               std::fabs(got - test_value(world, group.rank(), i)) <= 1e-2f * std::fabs(got)) {
      why << ": this rank's own value (was the all-reduce skipped?)";
    } else if (world > 1) {
      why << ": the mean is x / N rounded to " << half_name(kind)
          << " once per rank, summed in float32, the sum rounded once";
    }
    return why.str();
  }
  return "";
}

std::string check_orthogonalize(int rank) {
  const int64_t n = 40, r = 3;
  Tensor a = Tensor::empty({n, r});
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < r; ++j) {
      a.data()[k * r + j] = std::sin(0.3f * static_cast<float>(k * (j + 2) + rank)) +
                            (j == 2 ? 0.5f * a.data()[k * r] : 0.0f);
    }
  }
  Tensor q = a.clone();
  orthogonalize(q);
  const Tensor gram = matmul(q, q, true, false);
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < r; ++j) {
      const float want = i == j ? 1.0f : 0.0f;
      if (std::fabs(gram.data()[i * r + j] - want) > 1e-4f) {
        return "orthogonalize: column " + std::to_string(i) + " . column " + std::to_string(j) +
               " is " + std::to_string(gram.data()[i * r + j]) + ", expected " +
               std::to_string(want) + (i == j ? " (not normalised?)" : " (projections kept?)");
      }
    }
  }
  // The span is the input's: Q Qᵀ A = A.
  const Tensor back = matmul(q, matmul(q, a, true, false));
  if (max_abs_diff(back, a) > 1e-3f) {
    return "orthogonalize: the columns no longer span the input's (Q Q^T A differs from A by " +
           std::to_string(max_abs_diff(back, a)) + ")";
  }
  // A rank-deficient P, as a gradient's is at a high rank (M of rank 3 with singular
  // values about 1, 3e-3 and 1e-5, times a random 8 x 8 Q): every column unit or zero,
  // orthogonal to the others. One pass of Gram-Schmidt leaves rounding along the earlier
  // columns here, and PowerSGD at full rank drifts from the mean.
  {
    const int64_t rows = 48, cols = 8;
    Tensor left = Tensor::empty({rows, 3}), right = Tensor::empty({3, cols});
    Tensor mix = Tensor::empty({cols, cols});
    Rng rng(static_cast<uint64_t>(rank) + 1);
    for (float& v : left.span()) v = rng.uniform(-1.0f, 1.0f);
    for (float& v : right.span()) v = rng.uniform(-1.0f, 1.0f);
    for (float& v : mix.span()) v = rng.uniform(-1.0f, 1.0f);
    for (int64_t k = 0; k < rows; ++k) {
      left.data()[k * 3 + 1] *= 3e-3f;
      left.data()[k * 3 + 2] *= 9e-6f;
    }
    Tensor p = matmul(matmul(left, right), mix);
    orthogonalize(p);
    const Tensor g = matmul(p, p, true, false);
    for (int64_t i = 0; i < cols; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const float v = g.data()[i * cols + j];
        const bool ok =
            i == j ? std::fabs(v - 1.0f) < 1e-5f || std::fabs(v) < 1e-6f : std::fabs(v) < 1e-5f;
        if (ok) continue;
        return "orthogonalize on a rank-deficient matrix (rank 3, 8 columns): column " +
               std::to_string(i) + " . column " + std::to_string(j) + " is " + std::to_string(v) +
               (i == j ? ", neither 1 nor 0" : ", not 0") +
               ": one pass leaves rounding along the earlier columns; take the projections "
               "twice, in double";
      }
    }
  }
  // A column in the span of the ones before it becomes zeros, not NaN.
  Tensor dependent = Tensor::empty({4, 2});
  for (int64_t k = 0; k < 4; ++k) {
    dependent.data()[k * 2] = static_cast<float>(k + 1);
    dependent.data()[k * 2 + 1] = 2.0f * static_cast<float>(k + 1);
  }
  orthogonalize(dependent);
  for (int64_t k = 0; k < 4; ++k) {
    if (!(std::fabs(dependent.data()[k * 2 + 1]) < 1e-3f)) {
      return "orthogonalize: a column that is twice the one before it should become zeros, "
             "element " +
             std::to_string(k) + " is " + std::to_string(dependent.data()[k * 2 + 1]);
    }
  }
  return "";
}

// A bucket of three parameters, [6, 5], [5] and [5, 7], with rank-, step- and
// index-dependent gradients.
GradBucket test_bucket(int rank, int step) {
  GradBucket b;
  b.is_last = true;
  b.params = {0, 1, 2};
  b.shapes = {{6, 5}, {5}, {5, 7}};
  b.offsets = {0, 30, 35};
  b.buffer = Tensor::empty({70});
  for (int64_t i = 0; i < 70; ++i) {
    b.buffer.data()[i] =
        std::cos(0.7f * static_cast<float>(i * (step + 1)) + static_cast<float>(rank)) +
        0.1f * static_cast<float>(rank * (i % 3));
  }
  return b;
}

std::string check_powersgd(ProcessGroup& group) {
  const int world = group.size();
  SerialExecutor runner("self-check");
  {
    // Full rank: min(n, m) = 5, every matrix compressed: the plain mean.
    PowerSgd exact(group, runner, {.rank = 5, .start_iter = 0, .min_compression_rate = 0});
    GradBucket bucket = test_bucket(group.rank(), 0);
    Tensor mean = Tensor::zeros({70});
    for (int r = 0; r < world; ++r) add_(mean, test_bucket(r, 0).buffer, 1.0f / world);
    exact.reduce_bucket(bucket);
    if (max_abs_diff(bucket.buffer, mean) > 1e-4f) {
      int64_t worst = 0;
      for (int64_t i = 0; i < 70; ++i) {
        if (std::fabs(bucket.buffer.data()[i] - mean.data()[i]) >
            std::fabs(bucket.buffer.data()[worst] - mean.data()[worst])) {
          worst = i;
        }
      }
      return "PowerSGD at full rank (5, every matrix compressed): element " +
             std::to_string(worst) + " of the bucket is " +
             std::to_string(bucket.buffer.data()[worst]) + ", the plain mean is " +
             std::to_string(mean.data()[worst]) +
             (worst >= 30 && worst < 35 ? " (the bias: all-reduced and divided?)"
                                        : " (P all-reduced, orthogonalised, Q = M^T P "
                                          "all-reduced and divided by N, M = P Q^T?)");
    }
  }
  {
    // The warm-up (start_iter 1): the first step is the plain mean.
    PowerSgd warm(group, runner, {.rank = 1, .start_iter = 1});
    GradBucket bucket = test_bucket(group.rank(), 0);
    Tensor mean = Tensor::zeros({70});
    for (int r = 0; r < world; ++r) add_(mean, test_bucket(r, 0).buffer, 1.0f / world);
    warm.reduce_bucket(bucket);
    if (max_abs_diff(bucket.buffer, mean) > 1e-5f) {
      return "PowerSGD before start_iter: the bucket is not the plain mean (largest "
             "difference " +
             std::to_string(max_abs_diff(bucket.buffer, mean)) +
             "): divide by the world size and all-reduce, nothing else";
    }
  }
  // Error feedback, rank 1: sum of inputs = sum of outputs + the final error, per rank.
  PowerSgd lossy(group, runner, {.rank = 1, .start_iter = 0, .min_compression_rate = 0});
  Tensor inputs = Tensor::zeros({70}), outputs = Tensor::zeros({70});
  for (int step = 0; step < 3; ++step) {
    GradBucket bucket = test_bucket(group.rank(), step);
    add_(inputs, bucket.buffer);
    lossy.reduce_bucket(bucket);
    add_(outputs, bucket.buffer);
  }
  if (lossy.iteration() != 3) {
    return "PowerSGD: after three last buckets iteration() is " +
           std::to_string(lossy.iteration()) + ", not 3 (call end_bucket once per bucket)";
  }
  const Tensor& error = lossy.error(0);
  if (error.numel() != 70) return "PowerSGD: no error feedback kept for bucket 0";
  add_(outputs, error);
  if (max_abs_diff(outputs, inputs) > 1e-3f) {
    return "PowerSGD error feedback: over three steps, the inputs sum to something else than "
           "what was sent plus the final error (largest difference " +
           std::to_string(max_abs_diff(outputs, inputs)) +
           "): error = (input + old error) - what the bucket holds";
  }
  return "";
}

}  // namespace

std::string run_lesson14_self_check(ProcessGroup& group) {
  for (HalfKind kind : {HalfKind::fp16, HalfKind::bf16}) {
    std::string problem = first_problem_on_any_rank(check_compression(group, kind), group);
    if (!problem.empty()) return problem;
  }
  std::string problem = first_problem_on_any_rank(check_orthogonalize(group.rank()), group);
  if (!problem.empty()) return problem;
  return first_problem_on_any_rank(check_powersgd(group), group);
}

}  // namespace course
