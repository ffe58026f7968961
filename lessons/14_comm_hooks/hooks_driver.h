// hooks_driver.h: lesson 14, given: what ./lesson14 runs around your hooks: lesson 10's
// DDP with a hook chosen by name, the self-check, and the benchmark.
//
//   auto sync = make_hooked_ddp(model, *group, {.hook = "powersgd", .powersgd_rank = 4});
//   run_ddp_training(options, *group, factory, std::cout);    // lesson 09's loop
//   run_hooks_bench(*group, bench, std::cout);                // ./lesson14 --bench
//
// THE SELF-CHECK (run_lesson14_self_check, under a second), on rank-dependent data against
// serial oracles, naming the first thing that differs:
//   compress_and_all_reduce  fp16 and bf16: every element equals the oracle's (the halves
//                            of x_r / N summed in rank order in float32, rounded once);
//                            "the sum, not the mean" when the division is missing
//   orthogonalize            orthonormal columns spanning the input's; a dependent column
//                            becomes zeros
//   PowerSgd                 before start_iter the bucket is the plain mean; with the
//                            rank at min(n, m) it is the plain mean too;
//                            over three compressed steps with rank 1, what each rank meant
//                            to send equals what it sent plus its final error
//
// THE BENCHMARK (run_hooks_bench): lesson 10's bench model (784 -> 2048 x 4 -> 10,
// 14.2 M parameters), a synthetic batch per rank, one DDP (default buckets) per row, every
// row alive and the rounds interleaved, as lesson 10's: no hook; fp16; bf16; PowerSGD
// ranks 1, 2 and 4 (start_iter 0: compressing from the first step). Per row: the slowest
// rank's median step, its speed-up over no hook, the bytes this rank handed to its tcp
// sockets per step (tcp_bytes_sent) and the model's figure beside them: a float32
// all-reduce moves 2(N-1)/N * 4 bytes per value, the half all-reduce 2(N-1)/N * 2, and
// PowerSGD's per bucket its uncompressed values plus r(n + m) per matrix, as floats.
//
// What this is not: a training run (the bench's inputs learn nothing; ./lesson14 without
// --bench trains Fashion-MNIST).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "comm_hooks.h"
#include "ddp_bench.h"
#include "distributed_data_parallel.h"
#include "driver.h"
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
/// True for the hooks whose gradients are not the exact mean (fp16, bf16, powersgd).
bool hook_is_lossy(const std::string& hook);

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

 private:
  HookOptions options_;
  SerialExecutor runner_{"comm hooks"};
  std::unique_ptr<PowerSgd> powersgd_;
  std::unique_ptr<DistributedDataParallel> ddp_;  // last: destroyed first
};

/// The self-check above: "" when everything matched, else the first difference (the same
/// text on every rank). Collective.
std::string run_lesson14_self_check(ProcessGroup& group);
/// What rank 0 prints when the self-check passed.
extern const char* const kLesson14SelfCheckPassed;

/// The table above (every rank calls it; rank 0 prints to `out`). PASS when every row left
/// identical parameters on every rank.
/// The model, batch, rounds and CSV path are lesson 10's DdpBenchOptions (its svg_path is
/// not used).
Verdict run_hooks_bench(ProcessGroup& group, const DdpBenchOptions& options, std::ostream& out);

}  // namespace course
