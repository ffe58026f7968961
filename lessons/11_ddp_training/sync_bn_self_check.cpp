// sync_bn_self_check.cpp: lesson 11, given: the driver's self-check of SyncBatchNorm (see
// sync_bn_self_check.h).
#include "sync_bn_self_check.h"

#include <algorithm>
#include <cmath>

#include "bench_table.h"
#include "ops.h"
#include "sync_batch_norm.h"
#include "sync_check.h"

namespace course {
namespace {

constexpr int64_t kChannels = 3;

int64_t rows_of(int rank) {
  return rank + 2;
}
int64_t first_row_of(int rank) {
  int64_t first = 0;
  for (int r = 0; r < rank; ++r) first += rows_of(r);
  return first;
}

// Rows [first, first + rows) of the global input (x) and loss weights (w); rank r's rows
// have their own mean and spread, so the between-rank term of the variance matters.
std::pair<Tensor, Tensor> rows_of_ranks(int first_rank, int last_rank) {
  const int64_t first = first_row_of(first_rank), rows = first_row_of(last_rank + 1) - first;
  Tensor x = Tensor::empty({rows, kChannels}), w = Tensor::empty({rows, kChannels});
  int rank = first_rank;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t row = first + i;
    while (row >= first_row_of(rank + 1)) ++rank;
    for (int64_t c = 0; c < kChannels; ++c) {
      x.data()[i * kChannels + c] = static_cast<float>(
          std::sin(0.7 * static_cast<double>(row + 1) + 1.3 * c) * (1.0 + 0.5 * rank) + 1.0 * rank);
      w.data()[i * kChannels + c] =
          static_cast<float>(std::cos(0.9 * static_cast<double>(row) + c));
    }
  }
  return {x, w};
}

// "" or where got's rows differ from want's, relative to want's size.
std::string compare(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector(), e = want.to_vector();
  for (size_t i = 0; i < e.size(); ++i) {
    if (std::fabs(g[i] - e[i]) <= 1e-4f * std::max(1.0f, std::fabs(e[i]))) continue;
    return "row " + std::to_string(i / kChannels) + ", channel " + std::to_string(i % kChannels) +
           " is " + format_fixed(g[i], 6) + ", expected " + format_fixed(e[i], 6);
  }
  return "";
}

// "" or the first running statistic (running_mean, running_var) of `got` that differs from
// `want`'s.
std::string compare_running(const BatchNorm1d& got, const BatchNorm1d& want) {
  const NamedTensors g = got.named_buffers(), e = want.named_buffers();
  for (size_t k = 0; k < g.size() && k < e.size(); ++k) {
    if (g[k].first != "running_mean" && g[k].first != "running_var") continue;
    const std::vector<float> a = g[k].second.to_vector(), b = e[k].second.to_vector();
    for (size_t c = 0; c < b.size() && c < a.size(); ++c) {
      if (std::fabs(a[c] - b[c]) <= 1e-5f * std::max(1.0f, std::fabs(b[c]))) continue;
      return g[k].first + " of channel " + std::to_string(c) + " is " + format_fixed(a[c], 6) +
             ", expected " + format_fixed(b[c], 6) + " after one training step";
    }
  }
  return "";
}

}  // namespace

std::string self_check_sync_batch_norm(ProcessGroup& group) {
  const int rank = group.rank(), world = group.size();
  const auto [x, w] = rows_of_ranks(rank, rank);
  SyncBatchNorm sync_bn(kChannels, group);
  const Variable mine(x.clone(), true);
  const Variable y = sync_bn.forward(mine);
  sum(y * Variable(w)).backward();

  // One BatchNorm1d over every rank's rows, on every rank.
  const auto [all_x, all_w] = rows_of_ranks(0, world - 1);
  BatchNorm1d bn(kChannels);
  const Variable all(all_x.clone(), true);
  const Variable all_y = bn.forward(all);
  sum(all_y * Variable(all_w)).backward();
  const int64_t first = first_row_of(rank), rows = rows_of(rank);

  std::string problem;
  const std::string where = " (rank " + std::to_string(rank) + " holds " + std::to_string(rows) +
                            " of " + std::to_string(first_row_of(world)) + " rows; ranks hold " +
                            "different counts and means)";
  std::string differs = compare(y.data(), all_y.data().rows(first, rows));
  if (!differs.empty()) {
    problem = "sync_batch_norm_gather_stats: SyncBatchNorm's output on rank " +
              std::to_string(rank) +
              " differs from one BatchNorm1d over every rank's rows: " + differs + where +
              ": the global mean weights each rank by n_r, and the global variance is "
              "sum n_r (var_r + (mean_r - mean)^2) / n";
  } else if (!(differs = compare_running(sync_bn, bn)).empty()) {
    problem = "SyncBatchNorm::forward: the running statistics on rank " + std::to_string(rank) +
              " differ from one BatchNorm1d's over every rank's rows: " + differs + where +
              ": running_mean takes the global mean, running_var the global unbiased variance "
              "var * n / (n - 1), with n the global count (sync_batch_norm.h, FORWARD step "
              "4; batch_norm_update_running does both)";
  } else if (!(differs = compare(mine.grad(), all.grad().rows(first, rows))).empty()) {
    problem = "SyncBatchNormBackward::apply: the input gradient on rank " + std::to_string(rank) +
              " differs from one BatchNorm1d's over every rank's rows: " + differs + where +
              ": all-reduce [sum_dy | sum_dy_xmu] (2C floats, SUM) and compute dx from the "
              "global sums and count";
  }
  return first_problem_on_any_rank(problem, group);
}

}  // namespace course
