// distributed_data_parallel.h: lesson 10, the user's side of DDP (torch's
// DistributedDataParallel): a module wrapper whose forward arms the Reducer (given code).
//
//   DistributedDataParallel ddp(*model, *group, {.bucket_cap_bytes = 25 << 20});
//   optimizer.zero_grad();
//   Variable loss = cross_entropy(ddp.forward(x), y);
//   loss.backward();          // buckets all-reduced while backward runs (reducer.h)
//   optimizer.step();
//
//   {                                        // gradient accumulation over K micro-batches
//     auto guard = ddp.no_sync();            // K - 1 backwards without communication
//     for (k < K - 1) cross_entropy(ddp.forward(x_k), y_k).backward();
//   }
//   cross_entropy(ddp.forward(x_K), y_K).backward();   // this one reduces the sum
//
// Construction (collective): lesson 09's verify_same_parameters (the same names and
// shapes on every rank), then rank 0's parameters broadcast so every replica starts equal
// (torch's _sync_module_states), then the Reducer with its hooks and buckets.
//
// forward(x): rebuild_buckets() (once, after the first iteration), the module's forward,
// then, when grad mode is on and sync is required, prepare_for_backward with the output
// (the graph walk of find_unused_parameters starts there).
//
// It is also a GradientSync (lesson 09's seam), so lesson 09's training loop, which calls
// the module's forward itself, drives it: prepare_for_backward() arms the reducer (with
// no outputs: no graph walk) unless forward() already did, and finish_backward() checks
// that the reduction finished inside backward (else the reducer's "Expected to have
// finished reduction" error, at once rather than at the next iteration).
//
// What this is not: torch's buffer broadcast before every forward (lesson 11, BatchNorm),
// comm hooks, static_graph, or several devices per process.
//
// Thread safety: as the Reducer: one thread. `module` and `group` must outlive this.
#pragma once
#include <memory>
#include <string>
#include <utility>

#include "gradient_sync.h"
#include "module.h"
#include "process_group.h"
#include "reducer.h"

namespace course {

class DistributedDataParallel : public GradientSync {
 public:
  /// REQUIRES: every rank passes the same architecture (ConfigError otherwise, on every rank).
  DistributedDataParallel(Module& module, ProcessGroup& group, ReducerOptions options = {});

  /// See the top of this file.
  Variable forward(const Variable& x);

  Module& module() { return module_; }
  Reducer& reducer() { return reducer_; }
  /// torch's ddp.register_comm_hook: each bucket goes through `hook` instead of the plain
  /// all-reduce (reducer.h, COMMUNICATION HOOKS). Before the first backward.
  void register_comm_hook(CommHook hook) { reducer_.register_comm_hook(std::move(hook)); }

  // GradientSync (lesson 09's training loop).
  void prepare_for_backward() override;
  void finish_backward() override;
  /// The buckets' all-reduces, plus the used map's with find_unused_parameters.
  int64_t messages_per_step() const override;
  std::string describe() const override;
  /// The Reducer's hooks, final wait and copy back in the last backward (its
  /// last_step_times()): the synchronisation the training loop's clock counts as backward.
  std::optional<InBackwardSync> in_backward_sync() const override;

  /// While the returned guard lives, forward() does not arm the reducer: the next
  /// backward accumulates locally and sends nothing.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.require_sync_) {
      ddp_.require_sync_ = false;
    }
    ~NoSyncGuard() { ddp_.require_sync_ = previous_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

 private:
  Module& module_;
  ReducerOptions options_;
  Reducer reducer_;
  bool require_sync_ = true;
};

/// Every rank's parameters and buffers become rank 0's (one broadcast per tensor: the
/// parameters in order, then the buffers), as torch's DDP does at construction.
void broadcast_parameters(Module& module, ProcessGroup& group);

/// Every rank's buffers (batch norm's running statistics) become rank 0's, one broadcast per
/// buffer in order: what torch's DDP does before each forward with broadcast_buffers=True.
void broadcast_buffers(Module& module, ProcessGroup& group);

}  // namespace course
