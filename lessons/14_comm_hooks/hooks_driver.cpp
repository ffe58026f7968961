// hooks_driver.cpp: lesson 14, given: the hooked DDP, the self-check and the benchmark
// (see hooks_driver.h).
#include "hooks_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <utility>

#include "byte_stream.h"
#include "ddp_bench.h"
#include "ddp_training.h"
#include "emulated_link.h"
#include "error.h"
#include "ops.h"
#include "optimizer.h"
#include "rng.h"
#include "sequential.h"
#include "sync_check.h"
#include "tensor_ops.h"

namespace course {

const char* const kLesson14SelfCheckPassed =
    "self-check: fp16 and bf16 compression, Gram-Schmidt and PowerSGD (exact at full rank, "
    "error feedback over three steps) match their serial oracles";

const std::vector<std::string>& hook_names() {
  static const std::vector<std::string> names{"none", "allreduce", "fp16", "bf16", "powersgd"};
  return names;
}

bool hook_is_lossy(const std::string& hook) {
  return hook == "fp16" || hook == "bf16" || hook == "powersgd";
}

HookedDdp::HookedDdp(Module& module, ProcessGroup& group, const HookOptions& options,
                     ReducerOptions reducer_options)
    : options_(options) {
  const std::vector<std::string>& names = hook_names();
  if (std::find(names.begin(), names.end(), options.hook) == names.end()) {
    std::string list;
    for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
    throw ConfigError("rank " + std::to_string(group.rank()) + ": no communication hook named '" +
                      options.hook + "' (expected one of: " + list + ")");
  }
  if (hook_is_lossy(options.hook) && reducer_options.find_unused_parameters) {
    throw ConfigError("rank " + std::to_string(group.rank()) + ": the " + options.hook +
                      " hook runs its collectives on its own thread, and "
                      "find_unused_parameters all-reduces the used map from the training "
                      "thread at the same time: use one or the other (comm_hooks.h, THREADS)");
  }
  ddp_ = std::make_unique<DistributedDataParallel>(module, group, reducer_options);
  if (options.hook == "allreduce") {
    ddp_->register_comm_hook(allreduce_hook(group));
  } else if (options.hook == "fp16" || options.hook == "bf16") {
    const HalfKind kind = options.hook == "fp16" ? HalfKind::fp16 : HalfKind::bf16;
    ddp_->register_comm_hook(compress_hook(group, kind, runner_));
  } else if (options.hook == "powersgd") {
    powersgd_ = std::make_unique<PowerSgd>(
        group, runner_,
        PowerSgdOptions{.rank = options.powersgd_rank,
                        .start_iter = options.start_iter,
                        .min_compression_rate = options.min_compression_rate,
                        .warm_start = options.warm_start});
    ddp_->register_comm_hook(powersgd_->hook());
  }
}

std::string HookedDdp::describe() const {
  std::string base = ddp_->describe();
  if (options_.hook == "none") return base;
  if (options_.hook == "powersgd") {
    return base + ", PowerSGD hook (rank " + std::to_string(options_.powersgd_rank) +
           ", plain all-reduce for the first " + std::to_string(options_.start_iter) + " steps" +
           (options_.warm_start ? ", warm start" : "") + ")";
  }
  return base + ", " + options_.hook + " hook";
}

namespace {

// ---- The self-check ------------------------------------------------------------------

// Element i of rank r's test vector: rank- and index-dependent, of mixed signs, some large.
float test_value(int rank, size_t i) {
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
    sum += half_to_float(float_to_half(test_value(r, i) / static_cast<float>(world), kind), kind);
  }
  return half_to_float(float_to_half(sum, kind), kind);
}

std::string check_compression(ProcessGroup& group, HalfKind kind) {
  const int world = group.size();
  const size_t n = 1031;
  Tensor buffer = Tensor::empty({static_cast<int64_t>(n)});
  for (size_t i = 0; i < n; ++i) buffer.data()[i] = test_value(group.rank(), i);
  compress_and_all_reduce(group, buffer, kind);
  for (size_t i = 0; i < n; ++i) {
    const float got = buffer.data()[i], want = compressed_mean(world, i, kind);
    if (got == want || (std::isnan(got) && std::isnan(want))) continue;
    std::ostringstream why;
    why << "compress_and_all_reduce (" << half_name(kind) << ", " << world << " ranks): element "
        << i << " is " << got << ", expected " << want;
    if (world > 1 && std::fabs(got - want * static_cast<float>(world)) <= std::fabs(want) * 1e-2f) {
      why << ": the sum, not the mean (divide by the world size before the cast)";
    } else if (std::fabs(got - test_value(group.rank(), i)) <= 1e-2f * std::fabs(got)) {
      why << ": this rank's own value (was the all-reduce skipped?)";
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

// ---- The benchmark ---------------------------------------------------------------------

namespace {

using Clock = std::chrono::steady_clock;

struct BenchRow {
  std::string name;
  HookOptions hook;
  std::shared_ptr<Sequential> model;
  std::unique_ptr<Sgd> optimizer;
  std::unique_ptr<HookedDdp> sync;
  std::vector<double> times, bytes;
  double median = 0, bytes_per_step = 0, modelled_bytes = 0;
};

// Bytes one rank sends per step in the model of hooks_driver.h, for the reducer's buckets.
double modelled_bytes(const BenchRow& row, int world) {
  const double ring = 2.0 * (world - 1) / world;
  double total = 0;
  const std::vector<BucketInfo> buckets = row.sync->ddp().reducer().buckets();
  const std::vector<Variable> params = row.model->parameters();
  for (size_t b = 0; b < buckets.size(); ++b) {
    const int64_t values = buckets[b].bytes / 4;
    if (row.hook.hook == "fp16" || row.hook.hook == "bf16") {
      const int64_t per = (values + 2 * world - 1) / (2 * world) * 2;
      total += ring * 2.0 * static_cast<double>(per * world);
    } else if (row.hook.hook == "powersgd") {
      GradBucket bucket;
      for (size_t i : buckets[b].params) {
        bucket.params.push_back(i);
        bucket.shapes.push_back(params[i].shape());
      }
      const PowerSgdPlan plan = plan_powersgd(
          bucket,
          {.rank = row.hook.powersgd_rank, .min_compression_rate = row.hook.min_compression_rate});
      total += ring * 4.0 * static_cast<double>(plan.sent_elements());
    } else {
      total += ring * 4.0 * static_cast<double>(values);
    }
  }
  return total;
}

}  // namespace

Verdict run_hooks_bench(ProcessGroup& group, const DdpBenchOptions& o, std::ostream& out) {
  const int world = group.size(), rank = group.rank();
  const bool talk = rank == 0;
  std::vector<int64_t> sizes{784};
  for (int l = 0; l < o.layers; ++l) sizes.push_back(o.hidden);
  sizes.push_back(10);
  std::vector<BenchRow> rows;
  const auto add_row = [&](const std::string& name, HookOptions hook) {
    BenchRow row;
    row.name = name;
    row.hook = std::move(hook);
    Rng rng(1);
    row.model = make_mlp(sizes, rng);
    row.optimizer = std::make_unique<Sgd>(row.model->parameters(), SgdOptions{.lr = 1e-3f});
    // Every row with gradients as views into the buckets (lesson 10): no copy into the
    // buckets and back, work that is not the hooks'.
    row.sync = std::make_unique<HookedDdp>(*row.model, group, row.hook,
                                           ReducerOptions{.gradient_as_bucket_view = true});
    rows.push_back(std::move(row));
  };
  add_row("no hook", {.hook = "none"});
  add_row("fp16", {.hook = "fp16"});
  add_row("bf16", {.hook = "bf16"});
  for (int r : {1, 2, 4}) {
    add_row("powersgd rank " + std::to_string(r),
            {.hook = "powersgd", .powersgd_rank = r, .start_iter = 0});
  }
  const auto batch = bench_batch(o.batch_size, rank);
  const int64_t params = rows[0].model->parameter_count();
  if (talk) {
    out << "# lesson 14 --bench: MLP 784 -> " << o.hidden << " x " << o.layers << " -> 10, "
        << params << " parameters (" << std::fixed << std::setprecision(1)
        << static_cast<double>(params) * 4 / (1 << 20) << " MiB of gradients), batch "
        << o.batch_size << " per rank, " << world << " rank(s), " << group.backend() << ", "
        << o.steps << " interleaved rounds, median per row of the slowest rank, "
        << "gradient_as_bucket_view" << std::endl;
    out << "# " << link_header() << std::endl;
  }
  for (int round = 0; round < o.warmup + o.steps; ++round) {
    for (BenchRow& row : rows) {
      group.barrier();
      const uint64_t sent = tcp_bytes_sent();
      const auto start = Clock::now();
      ddp_train_step(*row.model, *row.optimizer, *row.sync, {batch.first, batch.second});
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (round < o.warmup) continue;
      row.times.push_back(seconds);
      row.bytes.push_back(static_cast<double>(tcp_bytes_sent() - sent));
    }
  }
  for (BenchRow& row : rows) {
    row.median = slowest_median(row.times, group);
    std::sort(row.bytes.begin(), row.bytes.end());
    row.bytes_per_step = row.bytes[row.bytes.size() / 2];
    row.modelled_bytes = modelled_bytes(row, world);
  }
  std::string differs;
  for (BenchRow& row : rows) {
    const std::string problem =
        check_identical_across_ranks(*row.model, group, "after " + row.name);
    if (!problem.empty() && differs.empty()) differs = problem;
  }
  if (talk) {
    out << "#              mode  step(ms)  x no hook  MB/step sent  MB/step model  "
           "compression"
        << std::endl;
    for (const BenchRow& row : rows) {
      out << std::setw(19) << row.name << std::setw(10) << std::setprecision(1) << row.median * 1e3
          << std::setw(11) << std::setprecision(2) << rows[0].median / row.median << std::setw(14)
          << std::setprecision(2) << row.bytes_per_step / 1e6 << std::setw(15)
          << row.modelled_bytes / 1e6 << std::setw(12);
      if (row.modelled_bytes > 0) {  // one rank sends nothing: no ratio
        out << std::setprecision(1) << rows[0].modelled_bytes / row.modelled_bytes << "x";
      } else {
        out << "-";
      }
      out << std::endl;
    }
    if (group.backend() != "tcp") {
      out << "# MB/step sent counts the tcp transport only: " << group.backend()
          << " moves its bytes itself (0 here)" << std::endl;
    }
    if (!o.csv_path.empty()) {
      const std::filesystem::path path(o.csv_path);
      if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
      std::ofstream csv(o.csv_path);
      csv << "mode,ranks,backend,link,step_ms,speedup,bytes_sent,bytes_model\n";
      for (const BenchRow& row : rows) {
        csv << row.name << "," << world << "," << group.backend() << ",\""
            << link_from_env().describe() << "\"," << row.median * 1e3 << ","
            << rows[0].median / row.median << "," << static_cast<int64_t>(row.bytes_per_step) << ","
            << static_cast<int64_t>(row.modelled_bytes) << "\n";
      }
      out << "# wrote " << o.csv_path << std::endl;
    }
  }
  if (!differs.empty()) return Verdict::fail(differs);
  return Verdict::pass("every row left identical parameters on every rank");
}

}  // namespace course
