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
  // TODO(lesson13): storage back for stage 3, then all_gather_async(shard -> full)
  COURSE_TODO();
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
  // TODO(lesson13): free `full`'s storage and tell the ledger
  COURSE_TODO();
}

Variable ShardedModel::forward(const Variable& x) {
  if (stale_) gather_after_step();
  Variable h = x;
  for (size_t i = 0; i < units_.size(); ++i) {
    // Unit i's parameters must be current before its layers run (gather, wait); with
    // prefetch, start unit i+1's all-gather first so it travels while unit i computes.
    // After the layers: the pre-backward node on the output (attach_pre_backward), then
    // reshard (stage 3 frees `full`; backward gathers it again).
    // TODO(lesson13): gather, prefetch the next, run, attach the node, reshard
    COURSE_TODO();
  }
  return h;
}

void ShardedModel::pre_backward(size_t i) {
  // Backward visits the units last to first: unit i needs its parameters again (stage 3),
  // and with prefetch unit i-1's all-gather can start now.
  // TODO(lesson13): gather this unit, prefetch the one before, wait for this one
  COURSE_TODO();
}

void ShardedModel::post_backward(size_t i) {
  // Every gradient of unit i is in grad_buffer. Stage 3: the parameters are not needed
  // any more (reshard). Then the reduction, started and not waited for: reduce-scatter
  // grad_buffer into shard_grad (SUM). Stage 1's shard_grad is a slice of grad_buffer: the
  // group's reduce-scatter is correct in place.
  // TODO(lesson13): reshard, then reduce_scatter_async
  COURSE_TODO();
}

void ShardedModel::collect_reduced(size_t i) {
  FlatUnit& u = units_[i];
  if (!u.reducing) return;
  // Wait for unit i's reduction. The sum over ranks of this rank's shard is in shard_grad
  // (stage 1: shard_grad is the shard's slice of grad_buffer): divide it by N. Stages 2-3
  // free grad_buffer (free_grad_buffer). The optimizer's gradient is then shard_grad.
  // TODO(lesson13): wait, divide by N, free the buffer, hand the optimizer its gradient
  COURSE_TODO();
}

}  // namespace course
