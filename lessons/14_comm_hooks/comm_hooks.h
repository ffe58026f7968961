// comm_hooks.h: lesson 14, sending fewer bytes: DDP communication hooks that compress each
// gradient bucket before it travels (torch.distributed.algorithms.ddp_comm_hooks). The
// hooks live as torch lays them out:
//   default_hooks.h   allreduce_hook, and fp16 / bf16 compression (compress_hook) over the
//                     half all-reduce (all_reduce_half); the formats are half_float.h's
//   powersgd_hook.h   PowerSGD: low-rank factors with error feedback (PowerSgd)
//
//   SerialExecutor runner("comm hooks");                       // the hooks' own thread
//   ddp.register_comm_hook(compress_hook(*group, HalfKind::fp16, runner));
//   // or
//   PowerSgd powersgd(*group, runner, {.rank = 4, .start_iter = 10});
//   ddp.register_comm_hook(powersgd.hook());
//
// THE SEAM (lesson 10, reducer.h: COMMUNICATION HOOKS). The Reducer hands each bucket to
// the hook in bucket order, NOT divided by the world size, and waits for the returned Work
// at the end of backward; the hook leaves the mean over ranks in the bucket's buffer.
//
// THREADS. A hook here does more than one collective and some arithmetic between them, so
// it cannot be one all_reduce_async. It queues its work on `runner`, a SerialExecutor: one
// thread that runs the buckets' work one at a time in bucket order (every rank issues the
// same collectives in the same order: process_group.h, rule 1) while backward goes on, and
// returns that Work. Between the first hook of a backward and the Reducer's final wait,
// only the runner's thread calls the group; the training thread calls it again only after
// that wait (so find_unused_parameters, whose used map the Reducer all-reduces from the
// training thread, is not supported with these hooks). A Work not yet started when the
// Reducer waits for it runs on the waiting thread (serial_executor.h, invariant 4).
//
#pragma once

#include "default_hooks.h"
#include "powersgd_hook.h"
