// data_parallel.h: lesson 08, torch.nn.DataParallel in one process, with threads as the
// devices (given: the four parts it calls are the exercise).
//
//   std::shared_ptr<Sequential> mlp = make_mlp({784, 512, 512, 10}, rng);
//   DataParallel dp(mlp, [] { Rng r(0); return make_mlp({784, 512, 512, 10}, r); }, 4);
//   Sgd opt(dp.parameters(), {.lr = 0.05f});       // the master's parameters
//   train_step(dp, opt, batch);                     // lesson 07's step, unchanged
//
// Every forward, in torch's order:
//
//   chunks  = scatter(x, K)               device 0 → every device   (serial, on device 0)
//   replicate(master, replicas[:chunks])  device 0 → every device   (serial, on device 0)
//   outputs = parallel_apply(replicas, chunks)     on every device   (parallel)
//   y       = gather(outputs)             every device → device 0   (serial, on device 0)
//
// and the backward that loss.backward() reaches through y's GatherBackward (gather.h):
// the replicas' backward in parallel, then the reduce-add into the master on device 0.
// The loss and the optimizer step run on device 0 alone, as in torch.
//
// DataParallel is a Module whose one child, "module", is the master: parameters() are the
// master's ("module.0.weight", ... as in torch's state_dict of a wrapped model).
//
// The replicas: C++ modules cannot copy themselves, so `make_replica` builds a module of
// the master's structure (any initial values: replicate() overwrites them), called once
// per device at construction. Unlike torch, devices == 1 still goes through replicate,
// scatter, parallel_apply and gather (torch calls the module directly), so the benchmark
// can show what the machinery costs against a plain one-thread step.
//
// Thread safety: one forward or backward at a time, from one thread (that thread is
// device 0). A forward's graph holds the pool, the master and the replicas, so it may
// outlive the DataParallel that made it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data_parallel_times.h"
#include "device_pool.h"
#include "module.h"
#include "variable.h"

namespace course {

using ModuleFactory = std::function<std::shared_ptr<Module>()>;

class DataParallel : public Module {
 public:
  /// REQUIRES: module non-null, devices >= 1, make_replica returns modules whose
  /// parameter names and shapes match the master's (ConfigError otherwise).
  DataParallel(std::shared_ptr<Module> module, const ModuleFactory& make_replica, int devices);

  /// x [B, ...] -> the master's output for x, computed by min(K, B) replicas.
  /// REQUIRES: B >= 1 and x does not require grad (a batch of data; ConfigError otherwise).
  Variable forward(const Variable& x) override;
  std::string describe() const override;

  /// The master module (torch's dp.module).
  Module& module() const { return *module_; }
  int devices() const { return pool_->size(); }
  /// The phase times of the last forward and, once it ran, its backward.
  const DataParallelTimes& times() const { return *times_; }

 private:
  std::shared_ptr<Module> module_;
  std::vector<std::shared_ptr<Module>> replicas_;
  std::shared_ptr<DevicePool> pool_;
  std::shared_ptr<DataParallelTimes> times_;
};

}  // namespace course
