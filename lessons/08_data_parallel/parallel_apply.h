// parallel_apply.h: lesson 08, part 3: every replica's forward on its own device's thread
// (torch.nn.parallel.parallel_apply).
//
//   std::vector<Variable> outputs = parallel_apply(pool, replicas, inputs);
//   // outputs[k] == replicas[k]->forward(inputs[k]), computed on device k's thread
//
//   device 0 (the caller) ──run──┬── replica 0 fwd ─────────────────┐
//   device 1 (a worker)          ├── replica 1 fwd ─────────┐       │   concurrently
//   device 2 (a worker)          └── replica 2 fwd ───────────────┐ │
//   device 0               <──── wait for all of them ────────┴───┴─┘   then the first
//                                                                       error, if any
//
// Each replica records its graph on the thread that runs it (lesson 06 keeps grad mode and
// sequence numbers per thread), so the replicas' graphs never meet; gather.h joins them.
//
// Two details torch's parallel_apply takes care of, and so must you:
//   - grad mode is per thread: the workers must run in the caller's mode, or evaluation
//     under a NoGradGuard would record graphs on replicas 1..K-1;
//   - an exception in a worker thread must not be lost or kill the process: it travels
//     back to the caller, who learns which device failed (torch's ExceptionWrapper says
//     "Caught ... in replica 2 on device 2"), after every other replica has finished.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device_pool.h"
#include "error.h"
#include "module.h"
#include "replicate.h"
#include "variable.h"

namespace course {

/// What failed on one device: "DataParallel: replica 2 failed in backward on device 2: ..."
class ReplicaError : public Error {
 public:
  ReplicaError(int device, const std::string& phase, const std::string& cause);
  /// The device whose replica failed.
  int device() const { return device_; }

 private:
  int device_;
};

/// Runs tasks[k] on device k of `pool` for every k, concurrently, waits for all of them,
/// and returns the seconds each one took (measured on its own thread). `phase` ("forward",
/// "backward") names what the tasks do, for errors. Each task runs in the caller's grad
/// mode (grad_mode_enabled() of the calling thread).
/// Errors: when tasks failed, throws after all have finished: the failure of the lowest
/// device, as a ReplicaError naming the device, the phase and the original what(); a
/// NotImplementedError (a stub) passes through unchanged, so the driver still reports the
/// TODO. The pool stays usable.
/// REQUIRES: tasks.size() <= pool.size().
std::vector<double> run_on_devices(DevicePool& pool,
                                   const std::vector<std::function<void()>>& tasks,
                                   const std::string& phase);

/// outputs[k] = replicas[k]->forward(inputs[k]), each on device k's thread (run_on_devices,
/// phase "forward"). When `busy_seconds` is given it receives run_on_devices' times.
/// REQUIRES: replicas.size() == inputs.size() <= pool.size() (ConfigError otherwise).
std::vector<Variable> parallel_apply(DevicePool& pool, const Replicas& replicas,
                                     const std::vector<Variable>& inputs,
                                     std::vector<double>* busy_seconds = nullptr);

}  // namespace course
