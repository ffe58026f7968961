// ddp_self_check.cpp: lesson 09, given: the driver's self-check (see ddp_self_check.h).
#include "ddp_self_check.h"

#include <cstring>
#include <numeric>
#include <vector>

#include "bench_table.h"
#include "distributed_sampler.h"
#include "naive_ddp.h"
#include "sequential.h"
#include "sync_check.h"

namespace course {
namespace {

struct SamplerCase {
  int64_t n;
  int world;
  bool shuffle;
  uint64_t seed;
  int64_t epoch;
  bool drop_last;
};

const SamplerCase kSamplerCases[] = {
    {129, 2, false, 0, 0, false},  // uneven: rank 1 needs the padding
    {10, 4, true, 0, 1, false},    // the README's table: two padded from the front
    {10, 4, true, 0, 1, true},     // drop_last: the tail is cut
    {3, 5, true, 3, 0, false},     // fewer examples than ranks: the front repeats
};

std::string describe(const SamplerCase& c) {
  return std::to_string(c.n) + " examples on " + std::to_string(c.world) + " ranks" +
         (c.shuffle ? ", shuffled (seed " + std::to_string(c.seed) + ", epoch " +
                          std::to_string(c.epoch) + ")"
                    : ", no shuffle") +
         (c.drop_last ? ", drop_last" : "");
}

// torch's definition, written out: the order, padded from the front or cut, then strided.
std::vector<int64_t> padded_order(const SamplerCase& c) {
  std::vector<int64_t> order;
  if (c.shuffle) {
    order = RandomSampler(c.n, c.seed).indices(c.epoch);
  } else {
    order.resize(static_cast<size_t>(c.n));
    std::iota(order.begin(), order.end(), 0);
  }
  const int64_t per_rank = c.drop_last ? c.n / c.world : (c.n + c.world - 1) / c.world;
  const auto total = static_cast<size_t>(per_rank * c.world);
  const size_t n = order.size();
  if (n > total) order.resize(total);
  for (size_t i = n; i < total; ++i) order.push_back(order[i % n]);  // from the front
  return order;
}

std::string join_counts(const std::vector<size_t>& counts) {
  std::string text;
  for (size_t r = 0; r < counts.size(); ++r) {
    if (r > 0) text += r + 1 == counts.size() ? " and " : ", ";
    text += std::to_string(counts[r]);
  }
  return text;
}

std::string check_sampler_case(const SamplerCase& c) {
  const std::vector<int64_t> padded = padded_order(c);
  const size_t per_rank = padded.size() / static_cast<size_t>(c.world);
  std::vector<std::vector<int64_t>> got;
  std::vector<size_t> counts;
  for (int r = 0; r < c.world; ++r) {
    const DistributedSampler sampler(c.n, c.world, r, c.shuffle, c.seed, c.drop_last);
    got.push_back(sampler.indices(c.epoch));
    counts.push_back(got.back().size());
    if (sampler.num_samples() != static_cast<int64_t>(per_rank) ||
        sampler.total_size() != static_cast<int64_t>(padded.size())) {
      return "DistributedSampler (" + describe(c) + "): num_samples() " +
             std::to_string(sampler.num_samples()) + " and total_size() " +
             std::to_string(sampler.total_size()) + "; expected " + std::to_string(per_rank) +
             " and " + std::to_string(padded.size()) +
             (c.drop_last ? " (floor(n / N) with drop_last)" : " (ceil(n / N))");
    }
  }
  for (size_t count : counts) {
    if (count == per_rank) continue;
    return "DistributedSampler: " + describe(c) + " gave " + join_counts(counts) +
           " indices; every rank needs " + std::to_string(per_rank) +
           (c.drop_last
                ? " (floor(" + std::to_string(c.n) + " / " + std::to_string(c.world) +
                      "): cut the order's tail to " + std::to_string(padded.size()) + ")"
                : " (ceil(" + std::to_string(c.n) + " / " + std::to_string(c.world) +
                      "): pad the order from its front to " + std::to_string(padded.size()) + ")");
  }
  for (int r = 0; r < c.world; ++r) {
    for (size_t k = 0; k < per_rank; ++k) {
      const size_t position = static_cast<size_t>(r) + k * static_cast<size_t>(c.world);
      const int64_t want = padded[position];
      if (got[static_cast<size_t>(r)][k] == want) continue;
      std::string why;
      if (position >= static_cast<size_t>(c.n)) {
        why = "position " + std::to_string(position) +
              " is padding: the order repeats from its front (order[0], order[1], ...)";
      } else {
        why = std::string("rank r takes positions r, r + N, r + 2N, ... of ") +
              (c.shuffle ? "lesson 07's RandomSampler(n, seed) order for this epoch"
                         : "the order 0, 1, ..., n - 1");
      }
      return "DistributedSampler (" + describe(c) + "): rank " + std::to_string(r) + "'s index " +
             std::to_string(k) + " is " + std::to_string(got[static_cast<size_t>(r)][k]) +
             ", expected " + std::to_string(want) + ": " + why;
    }
  }
  return "";
}

// A model of three layers whose initial values depend on the rank.
std::shared_ptr<Sequential> rank_seeded_model(int rank) {
  Rng rng(4242 + static_cast<uint64_t>(rank));
  return make_mlp({5, 4, 3}, rng);
}

std::string check_construction(Module& model, ProcessGroup& pg) {
  const auto params = model.named_parameters();
  std::vector<float> differs(params.size(), 0.0f);
  for (size_t j = 0; j < params.size(); ++j) {
    const std::vector<float> mine = params[j].second.data().to_vector();
    std::vector<float> rank0 = mine;
    pg.broadcast(rank0, 0);
    differs[j] = std::memcmp(mine.data(), rank0.data(), mine.size() * sizeof(float)) != 0;
  }
  std::vector<float> all(differs.size() * static_cast<size_t>(pg.size()));
  pg.all_gather(differs, all);
  for (int r = 0; r < pg.size(); ++r) {
    for (size_t j = 0; j < params.size(); ++j) {
      if (all[static_cast<size_t>(r) * params.size() + j] == 0.0f) continue;
      return "NaiveDdp's construction (broadcast_state): \"" + params[j].first + "\" on rank " +
             std::to_string(r) +
             " differs from rank 0's after construction (every rank seeded its model "
             "differently on purpose): broadcast every parameter's data, then every buffer, "
             "from rank 0";
    }
  }
  return "";
}

std::string check_variant(NaiveDdp& ddp, GradSync variant, ProcessGroup& pg) {
  const int rank = pg.rank(), world = pg.size();
  const auto params = ddp.module().named_parameters();
  std::vector<std::vector<float>> mean(params.size()), own(params.size());
  for (size_t j = 0; j < params.size(); ++j) {
    const Variable& p = params[j].second;
    for (size_t i = 0; i < static_cast<size_t>(p.numel()); ++i) {
      const float c = self_check_gradient_base(j, i);
      own[j].push_back(static_cast<float>(rank + 1) * c);
      mean[j].push_back(0.5f * static_cast<float>(world + 1) * c);
    }
    p.set_grad(Tensor::from_vector(p.shape(), own[j]));
  }
  const std::string function = variant == GradSync::flat ? "NaiveDdp::sync_gradients_flat"
                                                         : "NaiveDdp::sync_gradients_per_param";
  if (variant == GradSync::flat) {
    ddp.sync_gradients_flat();
  } else {
    ddp.sync_gradients_per_param();
  }
  std::string problem;
  for (size_t j = 0; j < params.size() && problem.empty(); ++j) {
    const Tensor g = params[j].second.grad();
    if (!g.defined()) {
      problem = function + ": \"" + params[j].first + "\" on rank " + std::to_string(rank) +
                " has no gradient afterwards: average it in place";
      break;
    }
    const std::vector<float> got = g.to_vector();
    const std::string what =
        describe_gradient_error(params[j].first, rank, world, got, mean[j], own[j]);
    if (!what.empty()) {
      problem = function + " (rank r's gradient is (r + 1) * c, so the mean over " +
                std::to_string(world) + " ranks is " + format_fixed(0.5 * (world + 1), 2) +
                " * c): " + what;
    }
  }
  return first_problem_on_any_rank(problem, pg);
}

}  // namespace

std::string self_check_distributed_sampler() {
  for (const SamplerCase& c : kSamplerCases) {
    std::string problem = check_sampler_case(c);
    if (!problem.empty()) return problem;
  }
  return "";
}

std::string self_check_naive_ddp(ProcessGroup& pg) {
  std::shared_ptr<Sequential> model = rank_seeded_model(pg.rank());
  NaiveDdp ddp(*model, pg, GradSync::per_param);
  std::string problem = check_construction(*model, pg);
  if (!problem.empty()) return problem;
  for (GradSync variant : {GradSync::per_param, GradSync::flat}) {
    problem = check_variant(ddp, variant, pg);
    if (!problem.empty()) return problem;
  }
  return "";
}

std::string run_lesson09_self_check(ProcessGroup& pg) {
  std::string problem = self_check_distributed_sampler();
  if (!problem.empty()) return problem;
  return self_check_naive_ddp(pg);
}

}  // namespace course
