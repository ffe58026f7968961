// distributed_data_parallel.h: lesson 10, the user's side of DDP (torch's
// DistributedDataParallel): a module wrapper whose forward arms the Reducer (given code).
//
//   DistributedDataParallel ddp(model, *group, {.bucket_cap_bytes = 25 << 20});
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
// The constructor broadcasts rank 0's parameters so every replica starts equal (torch's
// _sync_module_states). forward(x): rebuild_buckets() (once, after the first
// iteration), the module's forward, then, when grad mode is on and sync is required,
// prepare_for_backward with the output (the graph walk of find_unused_parameters
// starts there).
//
// What this is not: torch's buffer broadcast before every forward (lesson 11, BatchNorm),
// comm hooks, static_graph, or several devices per process.
//
// Thread safety: as the Reducer: one thread.
#pragma once
#include <memory>

#include "module.h"
#include "process_group.h"
#include "reducer.h"

namespace course {

class DistributedDataParallel {
 public:
  /// REQUIRES: every rank passes the same architecture; `group` and `module` outlive this.
  DistributedDataParallel(std::shared_ptr<Module> module, ProcessGroup& group,
                          ReducerOptions options = {});

  /// See the top of this file.
  Variable forward(const Variable& x);

  Module& module() { return *module_; }
  Reducer& reducer() { return reducer_; }

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
  std::shared_ptr<Module> module_;
  ReducerOptions options_;
  Reducer reducer_;
  bool require_sync_ = true;
};

/// Every rank's parameters become rank 0's (one broadcast per parameter, in order).
void broadcast_parameters(Module& module, ProcessGroup& group);

}  // namespace course
