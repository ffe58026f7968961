// hooked_ddp.h: lesson 14, given: lesson 10's DDP with a communication hook chosen by name
// (what ./lesson14 trains with, and what its bench and tests build).
//
//   HookedDdp sync(model, *group, {.hook = "powersgd", .powersgd_rank = 4});
//   run_ddp_training(options, *group, factory, std::cout);    // lesson 09's loop
//
// exact() is false for the hooks whose gradients are not the exact mean (fp16, bf16,
// PowerSGD): lesson 09's training run then prints its difference from plain DDP instead of
// requiring it within tolerance.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm_hooks.h"
#include "distributed_data_parallel.h"
#include "gradient_sync.h"
#include "module.h"
#include "process_group.h"
#include "serial_executor.h"

namespace course {

/// Which hook, with PowerSGD's options (torch's PowerSGDState names in the flags).
struct HookOptions {
  std::string hook = "powersgd";  ///< one of hook_names()
  int powersgd_rank = 4;
  int64_t start_iter = 10;
  double min_compression_rate = 2;
  bool warm_start = true;
};

/// "none" (the Reducer's own all-reduce), "allreduce", "fp16", "bf16", "powersgd".
const std::vector<std::string>& hook_names();
/// False for the hooks whose gradients are not the exact mean (fp16, bf16, powersgd).
bool hook_is_exact(const std::string& hook);

/// Lesson 10's DistributedDataParallel with the chosen hook registered; owns the hook's
/// thread and PowerSGD's state, which must outlive the reducer's use of them.
class HookedDdp final : public GradientSync {
 public:
  HookedDdp(Module& module, ProcessGroup& group, const HookOptions& options,
            ReducerOptions reducer_options = {});

  DistributedDataParallel& ddp() { return *ddp_; }
  /// PowerSGD's state (null for the other hooks).
  const PowerSgd* powersgd() const { return powersgd_.get(); }

  void prepare_for_backward() override { ddp_->prepare_for_backward(); }
  void finish_backward() override { ddp_->finish_backward(); }
  int64_t messages_per_step() const override { return ddp_->messages_per_step(); }
  std::string describe() const override;
  std::optional<InBackwardSync> in_backward_sync() const override {
    return ddp_->in_backward_sync();
  }
  /// hook_is_exact(options.hook).
  bool exact() const override { return hook_is_exact(options_.hook); }

 private:
  HookOptions options_;
  SerialExecutor runner_{"comm hooks"};
  std::unique_ptr<PowerSgd> powersgd_;
  std::unique_ptr<DistributedDataParallel> ddp_;  // last: destroyed first
};

}  // namespace course
