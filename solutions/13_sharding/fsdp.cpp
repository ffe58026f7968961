// fsdp.cpp: lesson 13: when a unit's parameters are gathered and freed, and when its
// gradients are reduced (the schedule is at the top of fsdp.h).
#include "fsdp.h"

#include "tensor_ops.h"

namespace course {

void ShardedModel::unshard(size_t i) {
  FlatUnit& u = units_[i];
  if (u.gathered || u.gathering) return;
  // Stage 3: `full` has no storage between uses; give it back (counted as gathered)
  // before the all-gather writes into it. Then all-gather this rank's shard into `full`.
  // BEGIN SOLUTION: storage back for stage 3, then all_gather_async(shard -> full)
  if (options_.stage == 3) {
    ledger_.add(MemoryKind::gathered, 4 * u.padded, "the gathered parameters of " + unit_name(i));
    u.full.resize_storage(u.padded);
  }
  u.gathering = group_.all_gather_async(u.shard.span(), u.full.span());
  // END SOLUTION
}

void ShardedModel::wait_gathered(size_t i) {
  FlatUnit& u = units_[i];
  if (u.gathering) {
    u.gathering->wait();
    u.gathering.reset();
    u.gathered = true;
  }
}

void ShardedModel::reshard(size_t i) {
  FlatUnit& u = units_[i];
  if (options_.stage != 3 || !u.gathered) return;
  // BEGIN SOLUTION: free `full`'s storage and tell the ledger
  u.full.resize_storage(0);
  ledger_.release(MemoryKind::gathered, 4 * u.padded);
  u.gathered = false;
  // END SOLUTION
}

Variable ShardedModel::forward(const Variable& x) {
  if (stale_) gather_after_step();
  Variable h = x;
  for (size_t i = 0; i < units_.size(); ++i) {
    // Unit i's parameters must be current before its layers run (gather, wait); with
    // prefetch, start unit i+1's all-gather first so it travels while unit i computes.
    // After the layers: the pre-backward node on the output (attach_pre_backward), then
    // reshard (stage 3 frees `full`; backward gathers it again).
    // BEGIN SOLUTION: gather, prefetch the next, run, attach the node, reshard
    unshard(i);
    if (options_.prefetch && options_.stage == 3 && i + 1 < units_.size()) unshard(i + 1);
    wait_gathered(i);
    h = run_layers(units_[i], h);
    h = attach_pre_backward(h, i);
    reshard(i);
    // END SOLUTION
  }
  return h;
}

void ShardedModel::pre_backward(size_t i) {
  // Backward visits the units last to first: unit i needs its parameters again (stage 3),
  // and with prefetch unit i-1's all-gather can start now.
  // BEGIN SOLUTION: gather this unit, prefetch the one before, wait for this one
  unshard(i);
  if (options_.prefetch && options_.stage == 3 && i > 0) unshard(i - 1);
  wait_gathered(i);
  // END SOLUTION
}

void ShardedModel::post_backward(size_t i) {
  // Every gradient of unit i is in grad_buffer. Stage 3: the parameters are not needed
  // any more (reshard). Then the reduction, started and not waited for: reduce-scatter
  // grad_buffer into shard_grad (SUM). Stage 1's shard_grad is a slice of grad_buffer: the
  // group's reduce-scatter is correct in place.
  // BEGIN SOLUTION: reshard, then reduce_scatter_async
  reshard(i);
  FlatUnit& u = units_[i];
  u.reducing =
      group_.reduce_scatter_async(u.grad_buffer.span(), u.shard_grad.span(), ReduceOp::SUM);
  // END SOLUTION
}

void ShardedModel::collect_reduced(size_t i) {
  FlatUnit& u = units_[i];
  if (!u.reducing) return;
  // Wait for unit i's reduction. The sum over ranks of this rank's shard is in shard_grad
  // (stage 1: shard_grad is the shard's slice of grad_buffer): divide it by N. Stages 2-3
  // free grad_buffer (free_grad_buffer). The optimizer's gradient is then shard_grad.
  // BEGIN SOLUTION: wait, divide by N, free the buffer, hand the optimizer its gradient
  u.reducing->wait();
  u.reducing.reset();
  scale_(u.shard_grad, 1.0f / static_cast<float>(world_));
  if (options_.stage != 1) free_grad_buffer(u);
  u.shard_param.set_grad(u.shard_grad);
  // END SOLUTION
}

}  // namespace course
