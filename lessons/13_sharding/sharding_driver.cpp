// sharding_driver.cpp: lesson 13, given: the self-check, the training run and the
// benchmark around the sharded model (see sharding_driver.h).
#include "sharding_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>

#include "byte_stream.h"
#include "collective_bench.h"
#include "distributed_data_parallel.h"
#include "distributed_sampler.h"
#include "emulated_link.h"
#include "error.h"
#include "flag_agreement.h"
#include "optimizer.h"
#include "rng.h"
#include "safetensors.h"
#include "sync_check.h"
#include "tensor_ops.h"
#include "trainer.h"

namespace course {

const char* const kLesson13SelfCheckPassed =
    "self-check: the ring's reduce-scatter and all-gather (4 sizes, sum and avg, in place) "
    "and stages 1, 2 and 3 (two SGD and two Adam steps, equal to lesson 10's DDP) match their "
    "oracles";

namespace {

using Clock = std::chrono::steady_clock;

int optimizer_slots(const DdpTrainingOptions& o) {
  if (o.optimizer == "adam") return 2;
  return o.momentum != 0.0f ? 1 : 0;
}

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
    auto [x, y] = bench_batch(rows, rank + 17 * step);
    batches.push_back({x, y});
  }
  return batches;
}

std::string check_stages(ProcessGroup& group) {
  const std::vector<int64_t> sizes{784, 33, 10};  // 26245 parameters: odd, and not a multiple of 3
  const std::vector<Batch> batches = synthetic_batches(group.rank(), 2, 8);
  // SGD first: it moves by the gradient's size, so a sum where the mean belongs shows;
  // Adam (scale-free) then checks its state follows the shards.
  for (const char* optimizer : {"sgd", "adam"}) {
    DdpTrainingOptions o;
    o.optimizer = optimizer;
    o.momentum = 0.0f;
    o.lr = o.optimizer == "adam" ? 1e-2f : 0.1f;
    for (int stage : {1, 2, 3}) {
      const double difference = compare_sharded_with_ddp(
          o, {.stage = stage, .optimizer_slots = o.optimizer == "adam" ? 2 : 0}, sizes, batches,
          group);
      if (!(difference <= sharded_tolerance(o))) {
        return "stage " + std::to_string(stage) + ": after two " + o.optimizer +
               " steps the parameters differ from lesson 10's DDP by " +
               std::to_string(difference) + " (tolerance " + std::to_string(sharded_tolerance(o)) +
               ")" +
               (stage == 1 ? ": is the gradient divided by N, and are the shards all-gathered?"
                           : ": reduce-scatter into shard_grad, divide by N (collect_reduced), "
                             "gather before each forward");
      }
    }
  }
  return "";
}

// ---- Memory --------------------------------------------------------------------------

std::string peak_breakdown(const MemoryLedger& ledger) {
  std::string text;
  for (int k = 0; k < kMemoryKinds; ++k) {
    const auto kind = static_cast<MemoryKind>(k);
    if (ledger.at_peak(kind) == 0) continue;
    if (!text.empty()) text += ", ";
    text += std::string(memory_kind_name(kind)) + " " +
            format_mib(static_cast<double>(ledger.at_peak(kind)));
  }
  return text;
}

}  // namespace

double sharded_tolerance(const DdpTrainingOptions& o) {
  return equivalence_tolerance(o);
}

double compare_sharded_with_ddp(const DdpTrainingOptions& o, const ShardingOptions& sharding,
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
  const double difference = max_abs_difference(reference->state_dict(), sharded.full_state_dict());
  return max_over_ranks(difference, group);
}

std::string run_lesson13_self_check(ProcessGroup& group) {
  std::string problem = first_problem_on_any_rank(check_ring_halves(group), group);
  if (!problem.empty()) return problem;
  return first_problem_on_any_rank(check_stages(group), group);
}

// ---- The training run ------------------------------------------------------------------

Verdict run_sharded_training(const ShardedTrainingOptions& o, ProcessGroup& group,
                             std::ostream& out) {
  const int world = group.size(), rank = group.rank();
  const bool talk = rank == 0 && !o.quiet;
  std::map<std::string, std::string> flags = ddp_training_flag_values(o);
  flags["--stage"] = std::to_string(o.sharding.stage);
  flags["--min-unit-params"] = std::to_string(o.sharding.min_unit_params);
  flags["--memory-budget"] = std::to_string(o.memory_budget_mib);
  flags["--no-prefetch"] = o.sharding.prefetch ? "no" : "yes";  // it changes the collectives' order
  check_same_flags(flags, group);
  if (o.device != "cpu") {
    throw ConfigError("rank " + std::to_string(rank) +
                      ": lesson 13 shards on the CPU only (--device cpu)");
  }
  const DdpData data = load_ddp_data(o);
  ShardingOptions sharding = o.sharding;
  sharding.optimizer_slots = optimizer_slots(o);
  if (talk) {
    out << "data: " << data.train.size() << " training and " << data.test.size()
        << " test examples, " << world << " rank(s) x batch " << o.batch_size << std::endl;
  }

  // 1. The same steps as lesson 10's DDP, on fresh copies (outside the budget).
  std::vector<Batch> first;
  {
    auto sampler =
        std::make_shared<DistributedSampler>(data.train.size(), world, rank, o.shuffle, o.seed);
    DataLoader loader(data.train, o.batch_size, sampler);
    loader.start_epoch(0);
    for (int s = 0; s < kEquivalenceSteps; ++s) {
      if (std::optional<Batch> b = loader.next()) first.push_back(*b);
    }
  }
  const double difference = compare_sharded_with_ddp(o, sharding, data.sizes, first, group);
  if (talk) {
    out << "equivalence: " << first.size() << " steps of stage " << sharding.stage
        << " vs lesson 10's DDP: largest parameter difference " << difference << " (tolerance "
        << sharded_tolerance(o) << ")" << std::endl;
  }

  // 2. The run, within the budget.
  const auto budget = static_cast<int64_t>(o.memory_budget_mib * (1 << 20));
  MemoryLedger ledger(rank, budget);
  std::shared_ptr<Sequential> mlp = make_ddp_model(o, data.sizes, rank);
  const int64_t psi = mlp->parameter_count();
  ShardedModel model(mlp, group, sharding, ledger);
  std::unique_ptr<Optimizer> optimizer = make_ddp_optimizer(o, model.shard_parameters());
  const double ddp_bytes = modelled_bytes_per_rank(0, psi, world, sharding.optimizer_slots);
  if (talk) {
    out << "model: " << psi << " parameters, " << o.optimizer << ", " << model.describe()
        << std::endl;
    out << "memory: DDP would hold " << format_mib(ddp_bytes) << " of model state per rank";
    if (budget > 0) {
      out << "; budget " << format_mib(static_cast<double>(budget)) << " per rank (" << std::fixed
          << std::setprecision(1) << ddp_bytes / static_cast<double>(budget) << "x smaller)"
          << std::defaultfloat;
    }
    out << std::endl;
  }
  auto sampler =
      std::make_shared<DistributedSampler>(data.train.size(), world, rank, o.shuffle, o.seed);
  DataLoader train_loader(data.train, o.batch_size, sampler);
  DataLoader test_loader(data.test, 1000, std::make_shared<SequentialSampler>(data.test.size()));
  double best = 0;
  Storage::reset_peak_cpu_bytes();
  const int64_t live_before = Storage::live_cpu_bytes();
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    sampler->set_epoch(epoch);
    train_loader.start_epoch(epoch);
    const auto start = Clock::now();
    double loss_sum = 0;
    int64_t samples = 0;
    int64_t step = 0;
    while (std::optional<Batch> batch = train_loader.next()) {
      const StepResult r = ddp_train_step(model, *optimizer, model, *batch);
      check_finite_step(model, r.loss, false, rank, epoch, step++);
      loss_sum += static_cast<double>(r.loss) * static_cast<double>(batch->targets.numel());
      samples += batch->targets.numel();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const EvalStats e = evaluate(model, test_loader);  // every rank: stage 3 gathers
    if (epoch < kTargetEpochs) best = std::max(best, e.accuracy);
    if (talk) {
      out << "epoch " << epoch + 1 << "/" << o.epochs << "  loss (rank 0) " << std::fixed
          << std::setprecision(4) << loss_sum / static_cast<double>(std::max<int64_t>(samples, 1))
          << "  test " << std::setprecision(2) << 100 * e.accuracy << "%  " << std::setprecision(1)
          << seconds << " s" << std::defaultfloat << std::endl;
    }
  }
  const int64_t measured = Storage::peak_cpu_bytes() - live_before + ledger.live_bytes();
  const double modelled =
      modelled_bytes_per_rank(sharding.stage, psi, world, sharding.optimizer_slots,
                              model.largest_unit(), sharding.prefetch ? 2 : 1);
  if (talk) {
    out << "memory (rank 0): model state peaked at "
        << format_mib(static_cast<double>(ledger.peak_bytes())) << " (" << peak_breakdown(ledger)
        << "); the model says " << format_mib(modelled) << "; every tensor of the process, "
        << "activations and batches included, peaked at about "
        << format_mib(static_cast<double>(measured)) << std::endl;
  }
  if (!o.checkpoint.empty()) {
    // Collective: every rank gathers the parameters; rank 0 gets the optimizer's state.
    NamedTensors state = model.full_state_dict();
    for (auto& [name, tensor] : model.consolidate_optimizer_state(*optimizer, 0)) {
      state.emplace_back("optimizer." + name, tensor);
    }
    if (rank == 0) {
      save_safetensors(o.checkpoint, state,
                       {{"stage", std::to_string(sharding.stage)},
                        {"optimizer_steps", std::to_string(optimizer->step_count())}});
      if (talk) {
        out << "checkpoint: the full parameters and the consolidated optimizer state in "
            << o.checkpoint << std::endl;
      }
    }
  }
  const std::string differs = check_identical_across_ranks(model.full_state_dict(), group);
  if (!differs.empty()) return Verdict::fail(differs);
  if (!(difference <= sharded_tolerance(o))) {
    return Verdict::fail("stage " + std::to_string(sharding.stage) + " differs from DDP by " +
                         std::to_string(difference) + " after " + std::to_string(first.size()) +
                         " steps (tolerance " + std::to_string(sharded_tolerance(o)) + ")");
  }
  std::ostringstream detail;
  detail << std::fixed << std::setprecision(2) << "best test accuracy " << 100 * best << "% within "
         << std::min(o.epochs, kTargetEpochs) << " epoch(s) (target " << 100 * o.target
         << "%), ranks identical, equal to DDP";
  if (budget > 0) {
    detail << ", model state within " << format_mib(static_cast<double>(budget)) << " per rank";
  }
  if (best < o.target) return Verdict::fail(detail.str());
  return Verdict::pass(detail.str());
}

// ---- The benchmark ----------------------------------------------------------------------

namespace {

// The slowest rank's mean seconds of `op` over `iterations` calls, after one warm-up.
template <typename Op>
double time_collective(ProcessGroup& group, int iterations, Op op) {
  op();
  group.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) op();
  const double mean = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  return max_over_ranks(mean, group);
}

// The ring's halves beside the whole ring, nccl-tests' way: size is the whole buffer (N*k
// values for the halves), algbw = size / time, busbw = algbw * the collective's factor
// ((N-1)/N for each half, 2(N-1)/N for the all-reduce): the busbw of the three should be
// alike, each near what one link carries.
void print_halves_table(ProcessGroup& group, std::ostream& out, bool talk) {
  const int world = group.size();
  if (talk) {
    out << "# collective       size   time(us)  algbw(GB/s)  busbw(GB/s)  (busbw = algbw x "
           "factor: all_reduce 2(N-1)/N, halves (N-1)/N)"
        << std::endl;
  }
  for (size_t bytes : {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20}) {
    const size_t count = bytes / 4 / static_cast<size_t>(world) * static_cast<size_t>(world);
    std::vector<float> whole(count, 1.0f), part(count / static_cast<size_t>(world), 1.0f);
    const int iterations = bytes >= (size_t{64} << 20) ? 3 : 10;
    const struct {
      const char* name;
      Collective collective;
      std::function<void()> op;
    } rows[] = {
        {"all_reduce", Collective::all_reduce, [&] { group.all_reduce(whole, ReduceOp::SUM); }},
        {"reduce_scatter", Collective::reduce_scatter,
         [&] { group.reduce_scatter(whole, part, ReduceOp::SUM); }},
        {"all_gather", Collective::all_gather, [&] { group.all_gather(part, whole); }},
    };
    for (const auto& row : rows) {
      const double seconds = time_collective(group, iterations, row.op);
      const double algbw = static_cast<double>(count) * 4 / seconds / 1e9;
      if (talk) {
        out << "# " << std::left << std::setw(15) << row.name << std::right << std::setw(6)
            << (bytes >> 20) << "M" << std::fixed << std::setprecision(0) << std::setw(11)
            << seconds * 1e6 << std::setprecision(2) << std::setw(13) << algbw << std::setw(13)
            << algbw * bus_factor(row.collective, world) << std::defaultfloat << std::endl;
      }
    }
  }
}

struct StageRow {
  std::string name;
  int stage = 0;
  double median = 0, values_sent = 0, values_model = 0;
  double ledger_peak = 0, model_bytes = 0, measured = 0;
};

}  // namespace

Verdict run_sharding_bench(ProcessGroup& group, const DdpBenchOptions& o, std::ostream& out) {
  const int world = group.size(), rank = group.rank();
  const bool talk = rank == 0;
  std::vector<int64_t> sizes{784};
  for (int l = 0; l < o.layers; ++l) sizes.push_back(o.hidden);
  sizes.push_back(10);
  const auto [bx, by] = bench_batch(o.batch_size, rank);
  const Batch batch{bx, by};
  DdpTrainingOptions adam;
  adam.optimizer = "adam";
  adam.lr = 1e-4f;
  std::vector<StageRow> rows;
  std::string differs;
  int64_t psi = 0;
  for (int stage = 0; stage <= 3; ++stage) {
    StageRow row;
    row.stage = stage;
    row.name = stage == 0 ? "DDP (lesson 10)" : "stage " + std::to_string(stage);
    Storage::reset_peak_cpu_bytes();
    const int64_t live_before = Storage::live_cpu_bytes();
    MemoryLedger ledger(rank);
    std::shared_ptr<Sequential> mlp = make_ddp_model(adam, sizes, rank);
    psi = mlp->parameter_count();
    std::unique_ptr<DistributedDataParallel> ddp;
    std::unique_ptr<ShardedModel> sharded;
    std::unique_ptr<Optimizer> optimizer;
    int64_t largest = 0;
    if (stage == 0) {
      ddp = std::make_unique<DistributedDataParallel>(
          *mlp, group, ReducerOptions{.gradient_as_bucket_view = true});
      optimizer = make_ddp_optimizer(adam, mlp->parameters());
      // DDP's model state, counted from its buffers: parameters, the buckets (the
      // gradients are views of them) and Adam's two moments.
      ledger.add(MemoryKind::parameters, 4 * psi, "parameters");
      int64_t buckets = 0;
      for (const BucketInfo& b : ddp->reducer().buckets()) buckets += b.bytes;
      ledger.add(MemoryKind::gradients, buckets, "buckets");
      ledger.add(MemoryKind::optimizer, 8 * psi, "Adam");
    } else {
      sharded = std::make_unique<ShardedModel>(mlp, group, ShardingOptions{.stage = stage}, ledger);
      optimizer = make_ddp_optimizer(adam, sharded->shard_parameters());
      largest = sharded->largest_unit();
    }
    Module& model = stage == 0 ? static_cast<Module&>(*mlp) : *sharded;
    GradientSync& sync = stage == 0 ? static_cast<GradientSync&>(*ddp) : *sharded;
    std::vector<double> times, sent;
    for (int step = 0; step < o.warmup + o.steps; ++step) {
      group.barrier();
      const uint64_t before = tcp_bytes_sent();
      const auto start = Clock::now();
      ddp_train_step(model, *optimizer, sync, batch);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      if (step < o.warmup) continue;
      times.push_back(seconds);
      sent.push_back(static_cast<double>(tcp_bytes_sent() - before) / 4.0);
    }
    row.median = slowest_median(times, group);
    std::sort(sent.begin(), sent.end());
    row.values_sent = sent[sent.size() / 2];
    row.values_model = modelled_values_sent(stage, psi, world);
    row.ledger_peak = static_cast<double>(ledger.peak_bytes());
    row.model_bytes = modelled_bytes_per_rank(stage, psi, world, 2, largest, 2);
    row.measured = static_cast<double>(Storage::peak_cpu_bytes() - live_before);
    if (sharded) {
      const std::string problem =
          check_identical_across_ranks(sharded->full_state_dict(), group, "after " + row.name);
      if (!problem.empty() && differs.empty()) differs = problem;
    } else {
      const std::string problem = check_identical_across_ranks(*mlp, group, "after DDP");
      if (!problem.empty() && differs.empty()) differs = problem;
    }
    rows.push_back(row);
  }
  if (talk) {
    out << "# lesson 13 --bench: MLP 784 -> " << o.hidden << " x " << o.layers << " -> 10, " << psi
        << " parameters, Adam, batch " << o.batch_size << " per rank, " << world << " rank(s), "
        << group.backend() << ", " << o.steps << " steps per row, median of the slowest rank"
        << std::endl;
    out << "# " << link_header() << std::endl;
    out << "#            mode  state MiB  model MiB  all tensors MiB  Mvalues sent  Mvalues model"
           "  step(ms)  x DDP"
        << std::endl;
    for (const StageRow& row : rows) {
      out << std::setw(17) << row.name << std::fixed << std::setprecision(1) << std::setw(11)
          << row.ledger_peak / (1 << 20) << std::setw(11) << row.model_bytes / (1 << 20)
          << std::setw(17) << row.measured / (1 << 20) << std::setprecision(2) << std::setw(14)
          << row.values_sent / 1e6 << std::setw(15) << row.values_model / 1e6
          << std::setprecision(1) << std::setw(10) << row.median * 1e3 << std::setprecision(2)
          << std::setw(7) << rows[0].median / row.median << std::endl;
    }
    if (group.backend() != "tcp") {
      out << "# values sent count the tcp transport only: " << group.backend()
          << " moves its bytes itself (0 here)" << std::endl;
    }
    if (!o.csv_path.empty()) {
      const std::filesystem::path path(o.csv_path);
      if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
      std::ofstream csv(o.csv_path);
      csv << "mode,ranks,backend,link,state_bytes,model_bytes,all_tensor_bytes,values_sent,"
             "values_model,step_ms,speedup\n";
      for (const StageRow& row : rows) {
        csv << row.name << "," << world << "," << group.backend() << ",\""
            << link_from_env().describe() << "\"," << static_cast<int64_t>(row.ledger_peak) << ","
            << static_cast<int64_t>(row.model_bytes) << "," << static_cast<int64_t>(row.measured)
            << "," << static_cast<int64_t>(row.values_sent) << ","
            << static_cast<int64_t>(row.values_model) << "," << row.median * 1e3 << ","
            << rows[0].median / row.median << "\n";
      }
      out << "# wrote " << o.csv_path << std::endl;
    }
  }
  print_halves_table(group, out, talk);
  if (!differs.empty()) return Verdict::fail(differs);
  return Verdict::pass("every row left identical parameters on every rank");
}

}  // namespace course
