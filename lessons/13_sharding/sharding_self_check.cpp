// sharding_self_check.cpp: lesson 13, given: the self-check and the comparison with
// lesson 10's DDP (see sharding_self_check.h).
#include "sharding_self_check.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ddp_bench.h"
#include "distributed_data_parallel.h"
#include "optimizer.h"
#include "sync_check.h"
#include "synthetic_batch.h"
#include "tensor_ops.h"

namespace course {

const char* const kLesson13SelfCheckPassed =
    "self-check: the ring's reduce-scatter and all-gather (4 sizes, sum and avg, in place) "
    "and stages 1, 2 and 3 (two SGD and two Adam steps, equal to lesson 10's DDP, each unit "
    "gathered and freed in its turn) match their oracles";

namespace {

// The same value on every rank: the largest over ranks.
double max_over_ranks(double value, ProcessGroup& group) {
  float v = static_cast<float>(value);
  group.all_reduce(std::span<float>(&v, 1), ReduceOp::MAX);
  return v;
}

// ---- The self-check --------------------------------------------------------------------

// Element i of rank r's input: integers and quarters, so every sum over up to 8 ranks is
// exact in float32 whatever the order of the additions.
float ring_value(int rank, size_t i) {
  return static_cast<float>(static_cast<int64_t>((i * 37 + static_cast<size_t>(rank) * 11) % 101) -
                            50) +
         0.25f * static_cast<float>(rank);
}

std::string check_ring_halves(ProcessGroup& group) {
  const int world = group.size(), rank = group.rank();
  for (size_t k : {size_t{0}, size_t{1}, size_t{7}, size_t{70001}}) {
    for (ReduceOp op : {ReduceOp::SUM, ReduceOp::AVG}) {
      for (bool in_place : {false, true}) {
        std::vector<float> input(k * world);
        for (size_t i = 0; i < input.size(); ++i) input[i] = ring_value(rank, i);
        std::vector<float> separate(k, -1.0f);
        std::span<float> output =
            in_place ? std::span<float>(input).subspan(rank * k, k) : std::span<float>(separate);
        group.reduce_scatter(input, output, op);
        for (size_t j = 0; j < k; ++j) {
          float want = 0;
          for (int r = 0; r < world; ++r) want += ring_value(r, rank * k + j);
          if (op == ReduceOp::AVG) want /= static_cast<float>(world);
          if (std::fabs(output[j] - want) <= 1e-6f * std::fabs(want)) continue;
          std::ostringstream why;
          why << "reduce_scatter (" << reduce_op_name(op) << ", " << k << " per rank"
              << (in_place ? ", in place" : "") << "): element " << j << " on rank " << rank
              << " is " << output[j] << ", expected " << want;
          float other = 0;
          for (int r = 0; r < world; ++r) other += ring_value(r, ((rank + 1) % world) * k + j);
          if (op == ReduceOp::SUM && output[j] == other) {
            why << ": that is slice r+1's sum (lesson 05's order; here rank r keeps slice r)";
          }
          return why.str();
        }
        // All-gather: every rank's slice back in place.
        std::vector<float> mine(k), gathered(k * world, -1.0f);
        for (size_t j = 0; j < k; ++j) mine[j] = ring_value(rank, j) + 1000.0f * rank;
        if (in_place) {
          std::copy(mine.begin(), mine.end(), gathered.begin() + static_cast<int64_t>(rank * k));
          group.all_gather(std::span<const float>(gathered).subspan(rank * k, k), gathered);
        } else {
          group.all_gather(mine, gathered);
        }
        for (size_t i = 0; k > 0 && i < gathered.size(); ++i) {
          const int owner = static_cast<int>(i / k);
          const float want = ring_value(owner, i % k) + 1000.0f * owner;
          if (gathered[i] == want) continue;
          return "all_gather (" + std::to_string(k) + " per rank" + (in_place ? ", in place" : "") +
                 "): element " + std::to_string(i) + " on rank " + std::to_string(rank) + " is " +
                 std::to_string(gathered[i]) + ", expected rank " + std::to_string(owner) +
                 "'s element " + std::to_string(i % k) + " = " + std::to_string(want);
        }
      }
    }
  }
  return "";
}

std::vector<Batch> synthetic_batches(int rank, int steps, int64_t rows) {
  std::vector<Batch> batches;
  for (int step = 0; step < steps; ++step) {
    auto [x, y] = synthetic_batch(rows, 784, 10, rank + 17 * step);
    batches.push_back({x, y});
  }
  return batches;
}

std::string check_stages(ProcessGroup& group) {
  // Three units (one per Linear), so that prefetch has a unit after the next to get wrong;
  // 26663 parameters: odd, and not a multiple of 3.
  const std::vector<int64_t> sizes{784, 33, 17, 10};
  const std::vector<Batch> batches = synthetic_batches(group.rank(), 2, 8);
  // SGD first: it moves by the gradient's size, so a sum where the mean belongs shows;
  // Adam (scale-free) then checks its state follows the shards.
  for (const char* optimizer : {"sgd", "adam"}) {
    DdpTrainingOptions o;
    o.optimizer = optimizer;
    o.momentum = 0.0f;
    o.lr = o.optimizer == "adam" ? 1e-2f : 0.1f;
    for (int stage : {1, 2, 3}) {
      for (bool prefetch : {true, false}) {
        if (!prefetch && stage != 3) continue;
        const ShardedComparison c =
            compare_sharded_with_ddp(o,
                                     {.stage = stage,
                                      .prefetch = prefetch,
                                      .optimizer_slots = o.optimizer == "adam" ? 2 : 0},
                                     sizes, batches, group);
        const std::string which =
            "stage " + std::to_string(stage) + (stage == 3 && !prefetch ? " without prefetch" : "");
        if (!c.problem.empty()) return which + ": " + c.problem;
        if (!(c.difference <= sharded_tolerance(o))) {
          return which + ": after two " + o.optimizer +
                 " steps the parameters differ from lesson 10's DDP by " +
                 std::to_string(c.difference) + " (tolerance " +
                 std::to_string(sharded_tolerance(o)) + ")" +
                 (stage == 1 ? ": is the gradient divided by N, and are the shards all-gathered?"
                             : ": reduce-scatter into shard_grad, divide by N (collect_reduced), "
                               "unshard before each forward");
        }
      }
    }
  }
  return "";
}

}  // namespace

double sharded_tolerance(const DdpTrainingOptions& o) {
  return equivalence_tolerance(o);
}

ShardedComparison compare_sharded_with_ddp(const DdpTrainingOptions& o,
                                           const ShardingOptions& sharding,
                                           const std::vector<int64_t>& sizes,
                                           const std::vector<Batch>& batches, ProcessGroup& group) {
  const int rank = group.rank();
  std::shared_ptr<Sequential> reference = make_ddp_model(o, sizes, rank);
  DistributedDataParallel ddp(*reference, group, {.gradient_as_bucket_view = true});
  std::unique_ptr<Optimizer> reference_optimizer = make_ddp_optimizer(o, reference->parameters());

  MemoryLedger ledger(rank);
  ShardedModel sharded(make_ddp_model(o, sizes, rank), group, sharding, ledger);
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, sharded.shard_parameters());
  for (const Batch& batch : batches) {
    ddp_train_step(*reference, *reference_optimizer, ddp, batch);
    ddp_train_step(sharded, *optimizer, sharded, batch);
  }
  ShardedComparison result;
  const double difference = max_abs_difference(reference->state_dict(), sharded.full_state_dict());
  result.difference = max_over_ranks(difference, group);
  result.problem = first_problem_on_any_rank(sharded.schedule_problem(), group);
  return result;
}

std::string run_lesson13_self_check(ProcessGroup& group) {
  std::string problem = first_problem_on_any_rank(check_ring_halves(group), group);
  if (!problem.empty()) return problem;
  return first_problem_on_any_rank(check_stages(group), group);
}

}  // namespace course
