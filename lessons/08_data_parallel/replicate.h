// replicate.h: lesson 08, part 2: copying the master module onto every device, and the
// way back, summing the replicas' gradients into the master (torch.nn.parallel.replicate,
// whose autograd function Broadcast has ReduceAddCoalesced as its backward).
//
//   replicate(master, replicas);         // forward: master's parameters -> every replica
//   ...                                  // each replica runs forward and backward
//   reduce_add_into(master, replicas);   // backward: sum_k replica_k.grad -> master.grad
//
// Every step, as torch's DataParallel does: the optimizer changed the master's
// parameters, so the replicas' copies are stale after each step. That copy, K-1 times
// the model, on device 0's bus, every step, is one of the costs that DDP removes.
//
//            master (device 0)                          master (device 0)
//       p0  p1  p2  ...                            g0  g1  g2  ...   (+= into p.grad)
//        │   │   │      replicate                   ▲   ▲   ▲      reduce_add_into
//   ┌────┼───┼───┼────┬──────────┐          ┌───────┴───┴───┴──┬──────────┐
//   ▼    ▼   ▼   ▼    ▼          ▼          │                  │          │
//  replica 0        replica 1   ...         replica 0 grads  replica 1   ...
//  (shares storage)  (copies)                         summed in device order
//
// Replica 0 lives on device 0 next to the master, so, like torch's broadcast, it keeps
// the master's tensors (no copy); replicas 1.. get new copies every call.
//
// Why a replica is a separate module and not the master itself: each replica's forward
// records its own graph on its own thread, and its backward accumulates into its own
// leaves' grad(); nothing is shared between threads but read-only data.
//
// C++ modules cannot copy themselves, so DataParallel builds the replica modules once
// from a factory (data_parallel.h) and replicate() fills them with the master's numbers.
#pragma once

#include <memory>
#include <vector>

#include "module.h"
#include "tensor.h"

namespace course {

/// A module's replicas, replicas[k] on device k.
using Replicas = std::vector<std::shared_ptr<Module>>;

/// For every replica k and every parameter i (named_parameters() order): replica k's
/// parameter i holds the master's values: replica 0 the master's own tensor (shared
/// storage), every other replica a new copy (new storage on every call). Each replica
/// parameter's gradient is cleared (set to none), so a backward leaves exactly this step's
/// gradient there. Buffers (named_buffers()) are copied into each replica's buffers.
/// REQUIRES: every replica has the master's parameter and buffer names and shapes, in the
/// same order (ConfigError naming the replica and the first name that differs); the
/// master is not one of the replicas.
void replicate(const Module& master, const Replicas& replicas);

/// torch.cuda.comm.reduce_add: the elementwise sum of `tensors`, added in index order
/// (tensors[0] + tensors[1] + ...), as a new tensor; the inputs are not changed.
/// REQUIRES: at least one tensor, all of the same shape (ConfigError otherwise).
Tensor reduce_add(const std::vector<Tensor>& tensors);

/// The backward of replicate(): for every master parameter i, the sum (reduce_add) of the
/// defined grad() of parameter i over `replicas`, accumulated into the master's gradient
/// through its AccumulateGrad node (node.h's grad_accumulator), so that it adds to what is
/// there and the master's post-accumulate hooks fire once. A parameter that no replica has
/// a gradient for (it took no part in the loss) is left alone.
/// REQUIRES: the replicas match the master as for replicate().
void reduce_add_into(const Module& master, const Replicas& replicas);

}  // namespace course
