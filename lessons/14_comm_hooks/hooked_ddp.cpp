// hooked_ddp.cpp: lesson 14, given: DDP with a hook chosen by name (see hooked_ddp.h).
#include "hooked_ddp.h"

#include <algorithm>

#include "error.h"

namespace course {

const std::vector<std::string>& hook_names() {
  static const std::vector<std::string> names{"none", "allreduce", "fp16", "bf16", "powersgd"};
  return names;
}

bool hook_is_exact(const std::string& hook) {
  return hook != "fp16" && hook != "bf16" && hook != "powersgd";
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
  if (!hook_is_exact(options.hook) && reducer_options.find_unused_parameters) {
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

}  // namespace course
