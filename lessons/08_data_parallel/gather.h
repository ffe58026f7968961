// gather.h: lesson 08, part 4: the replicas' outputs joined on device 0, and the way back
// (torch.nn.parallel.gather; its autograd function Gather has a Scatter as backward).
//
//   Variable logits = gather(outputs, context);   // [B, C] on device 0
//   Variable loss = cross_entropy(logits, targets);
//   loss.backward();                               // crosses back through GatherBackward
//
// Forward: the outputs (chunks of rows, in device order) concatenated along dimension 0.
// Backward: one node, GatherBackward, stands for the whole way from device 0 back to the
// master's parameters:
//
//   dL/dlogits [B, C] on device 0
//        │ 1. scatter: rows split with the outputs' sizes (gather's adjoint)
//        ▼
//   g_0 ─────────── g_1 ─────────── g_2                  one chunk per device
//        │ 2. each replica's backward from its output, on its own device's thread
//        ▼               ▼              ▼                 (run_on_devices, "backward")
//   replica 0 grads  replica 1 grads  replica 2 grads
//        │ 3. reduce_add_into (replicate's adjoint), on device 0
//        ▼
//   master.grad += sum_k replica_k.grad       and the master's hooks fire, once
//
// The node has no next_functions: it is where the loss's graph ends, and it delivers into
// the master's gradients itself through their AccumulateGrad nodes. The replicas'
// graphs are separate graphs, run by separate calls of the engine, one per thread: our
// engine (lesson 06) runs one graph on one thread, where torch's runs one thread per
// device inside one graph. The arithmetic is the same: the chain rule through a gather is
// a scatter, and through a broadcast a sum.
//
// Time: the node adds its phases into context.times (backward wall and per-device busy
// time, reduce-add), when given.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data_parallel_times.h"
#include "device_pool.h"
#include "module.h"
#include "node.h"
#include "variable.h"

namespace course {

/// What the backward across the gather needs; the node keeps these alive.
struct GatherContext {
  std::shared_ptr<DevicePool> pool;
  std::shared_ptr<Module> master;
  /// The replicas that produced the outputs, replicas[k] for outputs[k].
  std::vector<std::shared_ptr<Module>> replicas;
  /// Where the backward's phase times go; may be null.
  std::shared_ptr<DataParallelTimes> times;
};

/// The backward across the gather: steps 1-3 of the drawing above, in apply().
struct GatherBackward final : Node {
  GatherBackward(std::vector<Variable> outs, GatherContext ctx)
      : outputs(std::move(outs)), context(std::move(ctx)) {}
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "GatherBackward"; }

  std::vector<Variable> outputs;  // each replica's output: the root of its graph
  GatherContext context;
};

/// The outputs concatenated along dimension 0 on device 0. When grad mode is on and an
/// output requires grad, the result's grad_fn is GatherBackward (above), which on
/// backward splits the gradient by the outputs' row counts, runs every replica's backward
/// from outputs[k] with its chunk on device k, then calls reduce_add_into(master,
/// replicas) and clears the replicas' gradients (so that a second gather in the same
/// graph delivers only its own).
/// REQUIRES: at least one output; all of dimension >= 1 and equal beyond dimension 0;
/// outputs.size() == replicas.size() <= pool->size() (ConfigError otherwise).
Variable gather(const std::vector<Variable>& outputs, const GatherContext& context);

/// gather's last step (given, gather_given.cpp): `joined` as a Variable whose grad_fn, when
/// grad mode is on and an output requires grad, is a GatherBackward for `outputs`. The
/// node has no edges: it delivers to the master's gradients itself.
Variable gather_result(const Tensor& joined, const std::vector<Variable>& outputs,
                       const GatherContext& context);

}  // namespace course
