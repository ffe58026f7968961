// fsdp.h: lesson 13: sharding the model's state over the ranks: ZeRO stages 1 and 2, and
// FSDP (ZeRO stage 3), on flat parameter units.
//
//   MemoryLedger ledger(rank);
//   ShardedModel model(make_mlp(sizes, rng), *group, {.stage = 3}, ledger);
//   Adam optimizer(model.shard_parameters(), {.lr = 1e-3f});
//   ddp_train_step(model, optimizer, model, batch);     // lesson 09's step, unchanged
//   NamedTensors full = model.full_state_dict();       // collective
//
// DDP (lessons 09-11) keeps everything on every rank: with Adam in float32, 4 bytes of
// parameter, 4 of gradient and 8 of optimizer state per parameter, 16Ψ bytes for Ψ
// parameters, whatever N is. Sharding keeps 1/N of some of it per rank:
//
//   stage            each rank keeps             bytes per rank       moves per step
//   DDP              everything                  16Ψ                  all-reduce grads
//   1 (ZeRO-1)       optimizer state of 1/N      4Ψ + 4Ψ + 8Ψ/N        reduce-scatter grads,
//                                                                     all-gather params
//   2 (ZeRO-2)       + gradients of 1/N          4Ψ + 12Ψ/N            reduce-scatter grads,
//                                                                     all-gather params
//   3 (FSDP, ZeRO-3) + parameters of 1/N         16Ψ/N + the units    all-gather params
//                                                 gathered at once    twice, reduce-scatter
//                                                                     grads
//
// Ring all-reduce = reduce-scatter + all-gather, so stages 1 and 2 send what DDP sends
// (2Ψ values per rank, times (N-1)/N) and stage 3 half as much again (3Ψ). Stage 1 keeps
// every gradient, as DDP does, but a rank steps only its shard, so it needs only its
// shard's mean: a reduce-scatter, not an all-reduce (the ZeRO paper's stage 1; torch's
// ZeroRedundancyOptimizer instead steps after DDP's all-reduce and broadcasts each
// parameter from its owner, 3Ψ). Stages 1 and 2 differ in memory only: stage 2 frees each
// unit's full gradient once it is reduce-scattered.
//
// FLAT UNITS (torch FSDP's FlatParameter). The model's layers are grouped into units (the
// wrap policy: consecutive layers until a unit holds min_unit_params parameters; 0 makes
// every layer with parameters a unit). A unit's parameters are concatenated into one flat
// buffer, padded with zeros to a multiple of N, and cut into N equal shards; rank r owns
// shard r, elements [r*k, r*k + k), k = padded / N. Even flat shards, not torch
// ZeroRedundancyOptimizer's whole parameters per rank (greedy by size): every rank holds
// the same bytes whatever the layers' sizes, one all-gather or reduce-scatter serves a
// whole unit, and a parameter count not divisible by N costs at most N-1 padding
// elements per unit. The layers' parameters become views into the unit's flat buffer
// (`full`), so the layers run unchanged.
//
// The optimizer steps shard_parameters(): one Variable per unit, this rank's shard, whose
// grad() is the mean gradient of the shard. SGD and Adam work element by element, so
// stepping the shards is stepping the parameters (lesson 07's optimizers, unchanged).
//
// ONE STEP, per stage:
//
//  forward, unit i    stage 3: unshard(i) (all-gather the shards into `full`), prefetch
//                     unshard(i+1), run the layers, reshard(i) (free `full`);
//                     stages 1-2 after a step: unshard every unit (the updated shards)
//                     first. In grad mode the unit's output gets a pre-backward node.
//  backward, unit i   pre_backward(i), when the gradient reaches the unit's output:
//                     stage 3: unshard(i) again, prefetch unshard(i-1).
//                     post_backward(i), when every parameter of the unit has its gradient
//                     (copied into the flat grad_buffer by the given hooks): stage 3:
//                     reshard(i); start the reduce-scatter of grad_buffer into shard_grad
//                     (SUM; stage 1's shard_grad is a slice of its kept grad_buffer).
//  collect_reduced(i) wait for unit i's reduction; this rank's shard of the sum / N is
//                     the shard's gradient; stages 2-3 free grad_buffer. Called when the
//                     next unit's first gradient arrives (so that one unsharded gradient
//                     buffer is open at a time, stages 2-3), and by finish_backward for
//                     every unit still reducing.
//  optimizer.step()   on the shards; the next forward (stages 1-2) gathers them.
//
// The order of collectives is the same on every rank (process_group.h, rule 1): forward
// and backward visit the units in the same order everywhere, and every collective is
// issued from the training thread (the autograd engine runs on it).
//
// MEMORY: the ledger (memory_ledger.h) is told of every buffer this class allocates or
// frees: parameters (the full buffers of stages 1-2, the shards of stage 3), gradients
// (stage 1's full grad_buffer, stages 2-3's shard_grad), gathered (stage 3's `full` while
// gathered), communication (stages 2-3's grad_buffer while it is reduced), and the
// optimizer's state of each shard (optimizer_slots floats per value, reserved at
// construction: the optimizer allocates it at its first step). With a budget, the first
// allocation that does not fit throws MemoryBudgetError naming it.
//
// What this is not: torch's FSDP (no mixed precision, no CPU offload, no
// use_orig_params; every parameter must get a gradient every step), nor DeepSpeed (whose
// stage 2 reduces buckets to their owners during backward: the same traffic).
//
// Thread safety: one thread (the training thread) uses it, like a Module and a group.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gradient_sync.h"
#include "memory_ledger.h"
#include "module.h"
#include "optimizer.h"
#include "process_group.h"
#include "safetensors.h"
#include "sequential.h"

namespace course {

/// "unit 3": how the ledger and the errors name unit i (fsdp_given.cpp's allocations say
/// "the gathered parameters of " + unit_name(i)).
std::string unit_name(size_t i);

struct ShardingOptions {
  int stage = 3;                ///< 1: optimizer state; 2: + gradients; 3: + parameters (FSDP)
  int64_t min_unit_params = 0;  ///< the wrap policy (above); 0: one unit per layer
  bool prefetch = true;         ///< stage 3: gather the next unit while this one computes
  int optimizer_slots = 2;      ///< floats of optimizer state per parameter, reserved in the
                                ///< ledger (Adam 2, SGD with momentum 1, plain SGD 0)
};

/// One unit: its layers' parameters as one flat, padded, sharded buffer.
struct FlatUnit {
  size_t first_layer = 0, end_layer = 0;  ///< layers [first_layer, end_layer) of the model
  std::vector<Variable> params;           ///< the layers' parameters: views into `full`
  std::vector<std::string> names;         ///< their names in the model ("2.weight")
  std::vector<int64_t> offsets;           ///< where each starts in the flat buffer
  int64_t numel = 0;                      ///< the parameters' elements
  int64_t padded = 0;                     ///< numel rounded up to a multiple of N
  int64_t shard_numel = 0;                ///< padded / N
  Tensor full;            ///< [padded] every rank's shard; stage 3 frees its storage between uses
  Tensor shard;           ///< [shard_numel] this rank's (stages 1-2: a view of `full`)
  Tensor grad_buffer;     ///< [padded] the flat gradient being reduced (stage 1: kept)
  Tensor shard_grad;      ///< [shard_numel] the mean gradient of this rank's shard
  Variable shard_param;   ///< what the optimizer steps: data `shard`, grad `shard_grad`
  bool gathered = false;  ///< `full` holds the current parameters
  WorkPtr gathering;      ///< the all-gather into `full` in flight, if any
  WorkPtr reducing;       ///< the gradient reduction in flight, if any
  size_t grads_pending = 0;  ///< parameters whose gradient has not arrived this backward
};

struct FsdpPreBackwardNode;

class ShardedModel final : public Module, public GradientSync {
 public:
  /// Groups `model`'s layers into units, flattens and shards them, and makes every rank's
  /// parameters rank 0's (a broadcast, as DDP's constructor does). Collective. Throws
  /// ConfigError for a stage other than 1-3, MemoryBudgetError when the shards do not fit.
  ShardedModel(std::shared_ptr<Sequential> model, ProcessGroup& group,
               const ShardingOptions& options, MemoryLedger& ledger);
  ~ShardedModel() override;
  ShardedModel(const ShardedModel&) = delete;
  ShardedModel& operator=(const ShardedModel&) = delete;

  /// The model's forward, unit by unit (the schedule above). Collective.
  Variable forward(const Variable& x) override;
  std::string describe() const override;

  // GradientSync (lesson 09's training loop calls these around backward).
  void prepare_for_backward() override;
  void finish_backward() override;
  int64_t messages_per_step() const override;

  /// One Variable per unit: this rank's shard, its grad() the shard's mean gradient after
  /// finish_backward. What the optimizer is built on.
  std::vector<Variable> shard_parameters() const;
  /// Every parameter, full, named as in the model ("0.weight"), on every rank. Collective.
  NamedTensors full_state_dict();
  /// This rank's shards, "unit<i>.shard" (a sharded checkpoint: one file per rank).
  NamedTensors sharded_state_dict() const;
  /// ZeroRedundancyOptimizer's consolidate_state_dict(to): each of `optimizer`'s state
  /// tensors (it must be built on shard_parameters()), every rank's shard gathered on rank
  /// `to` and cut back into the model's parameters: "<parameter>.<key>"
  /// ("0.weight.exp_avg"), shaped like the parameter, padding dropped. Collective; empty
  /// on the other ranks. Throws ConfigError for an optimizer of other parameters.
  NamedTensors consolidate_optimizer_state(const Optimizer& optimizer, int to);
  /// Loads full parameters (full_state_dict()'s names) into this rank's shards.
  /// Collective on stages 1-2 (the next forward gathers). Throws ConfigError naming a
  /// missing or mis-shaped parameter.
  void load_full_state_dict(const NamedTensors& state);

  const std::vector<FlatUnit>& units() const { return units_; }
  int stage() const { return options_.stage; }
  /// The parameters' elements (Ψ) and the padded total.
  int64_t parameter_count_unpadded() const;
  int64_t padded_count() const;
  /// The largest unit's padded elements (what stage 3 gathers at once, twice with prefetch).
  int64_t largest_unit() const;

  /// The first rule of the schedule above this model has broken so far, "" when none
  /// (given code watches, the exercise does not have to):
  ///   - stage 3, when unit i's layers run in forward: exactly unit i, and with prefetch
  ///     unit i+1, are gathered or being gathered (forward prefetches the next unit);
  ///   - stage 3, when pre_backward(i) returns: unit i is gathered, and of the units
  ///     before it exactly unit i-1 with prefetch (none without) is gathered or being
  ///     gathered; none after i+1 (backward runs last to first);
  ///   - stages 2-3, after finish_backward: no unit holds its unsharded grad_buffer
  ///     (collect_reduced frees it);
  ///   - the ledger's peak at most 10% above modelled_bytes_per_rank for this model
  ///     (which holds when the ledger is this model's alone).
  /// The text names the function and the rule ("forward: unit 0 ran with units 0 and 2
  /// gathered or being gathered; ..."). Not collective.
  std::string schedule_problem() const;

  // ---- The exercise (fsdp.cpp) ---------------------------------------------------------
  // torch FSDP's FlatParamHandle.unshard / reshard, and its pre- and post-backward hooks.
  // Every method runs on the training thread; the collectives it starts are issued in the
  // same order on every rank because forward and backward visit the units in the same
  // order everywhere (the schedule above).

  /// Unit i's parameters, full, in `full` (torch's unshard).
  /// REQUIRES: i < units().size().
  /// EFFECT: nothing when the unit is gathered or its all-gather is in flight; else stage 3
  ///   first gives `full` its storage back (ledger: gathered, unit_name(i)), then the
  ///   all-gather of every rank's `shard` into `full` starts (`gathering`). Does not wait.
  /// Collective: every rank calls it for the same unit at the same point of the schedule.
  void unshard(size_t i);
  /// REQUIRES: i < units().size().
  /// EFFECT: waits for unit i's all-gather, if one is in flight; then `gathered` is true
  ///   and `full` holds the current parameters. Not collective (it only waits).
  void wait_gathered(size_t i);
  /// Unit i's `full` freed (torch's reshard).
  /// REQUIRES: i < units().size(); no all-gather of unit i in flight.
  /// EFFECT: stage 3, when gathered: `full`'s storage resized to 0, the ledger's gathered
  ///   bytes released, `gathered` false. Stages 1-2 keep `full` (the layers' parameters are
  ///   views into it): a no-op. Not collective.
  void reshard(size_t i);
  /// Called by the pre-backward node when the gradient reaches unit i's output, before its
  /// layers' backward.
  /// EFFECT: unit i unsharded and waited for; stage 3 with prefetch: unit i-1's unshard
  ///   started first (backward visits the units last to first).
  /// Collective: as unshard.
  void pre_backward(size_t i);
  /// Called when every parameter of unit i has its gradient in grad_buffer.
  /// REQUIRES: no reduction of unit i in flight.
  /// EFFECT: stage 3: reshard(i); then the SUM reduce-scatter of grad_buffer into
  ///   shard_grad starts (`reducing`); not waited for.
  /// Collective: every rank, for the same unit, in the same order.
  void post_backward(size_t i);
  /// REQUIRES: i < units().size().
  /// EFFECT: when a reduction of unit i is in flight: waited for, shard_grad divided by N
  ///   (the mean of this rank's shard), stages 2-3 free grad_buffer (free_grad_buffer:
  ///   ledger communication released), and shard_param's grad() is shard_grad. Else
  ///   nothing. Not collective (it only waits).
  void collect_reduced(size_t i);

 private:
  // Given (fsdp_given.cpp; check_held in fsdp_schedule_check.cpp).
  void build_units();
  void flatten_and_broadcast(FlatUnit& unit);
  void register_hooks();
  void on_gradient(size_t unit, size_t param);
  Variable attach_pre_backward(const Variable& out, size_t unit);
  Variable run_layers(const FlatUnit& unit, Variable x);
  void check_held(size_t unit, bool backward);
  friend struct FsdpPreBackwardNode;
  void gather_after_step();
  void free_grad_buffer(FlatUnit& unit);

  std::shared_ptr<Sequential> model_;
  ProcessGroup& group_;
  ShardingOptions options_;
  MemoryLedger& ledger_;
  int rank_ = 0, world_ = 1;
  std::vector<FlatUnit> units_;
  std::vector<std::pair<Variable, int>> hooks_;  // (parameter, hook id), removed at the end
  bool stale_ = false;            // stages 1-2: the shards were stepped; `full` is not yet current
  std::string schedule_problem_;  // the first rule broken (schedule_problem)
};

/// The ZeRO paper's bytes per rank for `stage` (0: DDP) with Ψ = params, N ranks and
/// `slots` floats of optimizer state per parameter (Adam: 2): (4 + 4 + 4*slots) Ψ cut by
/// the stage, plus what is open for one unit at a time: stage 2 one unsharded gradient
/// buffer of `largest_unit` elements, stage 3 that and `gathered_units` gathered units
/// (2 with prefetch).
double modelled_bytes_per_rank(int stage, int64_t params, int world, int slots,
                               int64_t largest_unit = 0, int gathered_units = 2);
/// Values one rank sends per step, from the ring's cost: DDP, stages 1-2 2(N-1)/N Ψ, stage 3
/// 3(N-1)/N Ψ (padding included when `params` is the padded count).
double modelled_values_sent(int stage, int64_t params, int world);

}  // namespace course
