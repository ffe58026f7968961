// powersgd_hook_given.cpp: lesson 14, given: PowerSGD's bookkeeping (its state per bucket,
// the Qs' start, the counters), the plan of a bucket and write_low_rank (torch's
// powerSGD_hook.py). The orthogonalisation and the step are the exercise
// (powersgd_hook.cpp).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "error.h"
#include "half_float.h"
#include "powersgd_hook.h"
#include "rng.h"
#include "tensor_ops.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define COURSE_HAVE_AVX2_CLONE 1
#endif

namespace course {

namespace {

// Eight floats as one value (GCC and Clang vector extensions): two SSE registers by
// default, one AVX register in the avx2 clone below (moved with memcpy, never returned).
typedef float F8 __attribute__((vector_size(32)));

// For `rows` rows of k values: error = m - p qᵀ, m = p qᵀ, with qt = qᵀ ([r, k]): a row of
// p qᵀ is the rows of qt scaled by that row's r coefficients and added, 8 values at a time.
// Only multiplies and adds, in the same order at any vector width (no fused multiply-add):
// ranks on different CPUs write the same bits.
[[gnu::always_inline]] inline void low_rank_rows(float* m, float* error, const float* p,
                                                 const float* qt, int64_t rows, int64_t k,
                                                 int64_t r) {
  for (int64_t i = 0; i < rows; ++i) {
    float* mine = m + i * k;
    float* lost = error + i * k;
    const float* coef = p + i * r;
    int64_t j = 0;
    for (; j + 8 <= k; j += 8) {
      F8 kept = {}, row_of_qt, before;
      for (int64_t c = 0; c < r; ++c) {
        std::memcpy(&row_of_qt, qt + c * k + j, sizeof(F8));
        kept += coef[c] * row_of_qt;
      }
      std::memcpy(&before, mine + j, sizeof(F8));
      const F8 left = before - kept;
      std::memcpy(lost + j, &left, sizeof(F8));
      std::memcpy(mine + j, &kept, sizeof(F8));
    }
    for (; j < k; ++j) {
      float kept = 0;
      for (int64_t c = 0; c < r; ++c) kept += coef[c] * qt[c * k + j];
      lost[j] = mine[j] - kept;
      mine[j] = kept;
    }
  }
}

void low_rank_rows_default(float* m, float* error, const float* p, const float* qt, int64_t rows,
                           int64_t k, int64_t r) {
  low_rank_rows(m, error, p, qt, rows, k, r);
}

#ifdef COURSE_HAVE_AVX2_CLONE
__attribute__((target("avx2"))) void low_rank_rows_avx2(float* m, float* error, const float* p,
                                                        const float* qt, int64_t rows, int64_t k,
                                                        int64_t r) {
  low_rank_rows(m, error, p, qt, rows, k, r);
}
#endif

}  // namespace

void write_low_rank(const Tensor& m, const Tensor& p, const Tensor& q, const Tensor& error) {
  const bool shapes_ok = m.dim() == 2 && p.dim() == 2 && q.dim() == 2 &&
                         error.shape() == m.shape() && p.shape()[0] == m.shape()[0] &&
                         q.shape()[0] == m.shape()[1] && q.shape()[1] == p.shape()[1];
  if (!shapes_ok) {
    throw ConfigError("write_low_rank: m " + shape_str(m.shape()) + ", p " + shape_str(p.shape()) +
                      ", q " + shape_str(q.shape()) + ", error " + shape_str(error.shape()) +
                      ": needs m and error [n, k], p [n, r], q [k, r]");
  }
  const int64_t k = m.shape()[1], r = p.shape()[1];
  if (m.numel() == 0) return;
  // One pass over m and error: every row of p qᵀ is made in registers from qᵀ (r rows of
  // k floats, small enough to stay in cache) and written straight to where it goes.
  std::vector<float> qt(static_cast<size_t>(k * r));
  const float* q_rows = q.data();
  for (int64_t j = 0; j < k; ++j) {
    for (int64_t c = 0; c < r; ++c) qt[static_cast<size_t>(c * k + j)] = q_rows[j * r + c];
  }
  auto rows_kernel = low_rank_rows_default;
#ifdef COURSE_HAVE_AVX2_CLONE
  if (cpu_has_avx2()) rows_kernel = low_rank_rows_avx2;
#endif
  rows_kernel(m.data(), error.data(), p.data(), qt.data(), m.shape()[0], k, r);
}

PowerSgdPlan plan_powersgd(const GradBucket& bucket, const PowerSgdOptions& options) {
  PowerSgdPlan plan;
  for (size_t j = 0; j < bucket.params.size(); ++j) {
    const Shape& shape = bucket.shapes[j];
    const int64_t numel = shape_numel(shape);
    const int64_t n = shape.empty() ? 1 : shape[0];
    const int64_t m = n == 0 ? 0 : numel / n;
    const int64_t r = std::min({n, m, static_cast<int64_t>(options.rank)});
    const bool compress = r > 0 && static_cast<double>(n) * static_cast<double>(m) >=
                                       options.min_compression_rate * static_cast<double>(r) *
                                           static_cast<double>(n + m);
    if (compress) {
      plan.compressed.push_back({j, n, m, r});
      plan.p_elements += n * r;
      plan.q_elements += m * r;
    } else {
      plan.uncompressed.push_back(j);
      plan.uncompressed_elements += numel;
    }
  }
  return plan;
}

PowerSgd::PowerSgd(ProcessGroup& group, SerialExecutor& runner, PowerSgdOptions options)
    : group_(group), runner_(runner), options_(options) {
  if (options_.rank < 1) {
    throw ConfigError("rank " + std::to_string(group.rank()) +
                      ": PowerSGD needs a matrix approximation rank of at least 1, not " +
                      std::to_string(options_.rank));
  }
}

CommHook PowerSgd::hook() {
  return [this](GradBucket& bucket) {
    GradBucket copy = bucket;  // the views share the bucket's storage
    return runner_.submit([this, copy]() mutable { reduce_bucket(copy); },
                          "PowerSGD of bucket " + std::to_string(bucket.index),
                          /*run_on_wait=*/true);
  };
}

const Tensor& PowerSgd::error(size_t index) const {
  static const Tensor kNone;
  const auto it = states_.find(index);
  return it == states_.end() ? kNone : it->second.error;
}

PowerSgd::BucketState& PowerSgd::state_for(const GradBucket& bucket) {
  auto it = states_.find(bucket.index);
  if (it != states_.end()) {
    if (it->second.params != bucket.params || it->second.error.numel() != bucket.buffer.numel()) {
      throw ConfigError("rank " + std::to_string(group_.rank()) + ": PowerSGD: bucket " +
                        std::to_string(bucket.index) + " now holds other parameters (" +
                        std::to_string(bucket.buffer.numel()) + " elements, was " +
                        std::to_string(it->second.error.numel()) +
                        "): the buckets changed after PowerSGD's first compressed step, and "
                        "its error and Qs belong to the old ones; start compressing after the "
                        "Reducer's rebuild (--start-iter 2 or more)");
    }
    return it->second;
  }
  BucketState state;
  state.params = bucket.params;
  state.plan = plan_powersgd(bucket, options_);
  state.error = Tensor::zeros({bucket.buffer.numel()});
  state.p_flat = Tensor::zeros({state.plan.p_elements});
  state.q_flat = Tensor::zeros({state.plan.q_elements});
  int64_t p_at = 0, q_at = 0;
  for (const PowerSgdMatrix& mat : state.plan.compressed) {
    state.ps.push_back(state.p_flat.rows(p_at, mat.n * mat.rank).reshape({mat.n, mat.rank}));
    state.qs.push_back(state.q_flat.rows(q_at, mat.m * mat.rank).reshape({mat.m, mat.rank}));
    p_at += mat.n * mat.rank;
    q_at += mat.m * mat.rank;
  }
  return states_.emplace(bucket.index, std::move(state)).first->second;
}

void PowerSgd::start_qs(BucketState& state, size_t bucket_index) {
  if (!state.qs_ready || !options_.warm_start) {
    // The same numbers on every rank: the seed, the step and the bucket pick the stream.
    Rng rng(options_.seed + static_cast<uint64_t>(iteration_) * 0x9e3779b97f4a7c15ull,
            bucket_index);
    for (float& v : state.q_flat.span()) v = rng.uniform(-1.0f, 1.0f);
    state.qs_ready = true;
  }
  for (const Tensor& q : state.qs) orthogonalize(q);
}

void PowerSgd::end_bucket(const GradBucket& bucket, int64_t sent_elements) {
  sent_this_iteration_ += sent_elements;
  if (bucket.is_last) {
    last_sent_ = sent_this_iteration_;
    sent_this_iteration_ = 0;
    ++iteration_;
  }
}

Tensor PowerSgd::matrix_view(const Tensor& flat, const GradBucket& bucket,
                             const PowerSgdMatrix& matrix) {
  return flat.rows(bucket.offsets[matrix.param], matrix.n * matrix.m).reshape({matrix.n, matrix.m});
}

}  // namespace course
