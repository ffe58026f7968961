// process_group.h: the interface every communication backend implements.
//
// The same contract as torch.distributed's ProcessGroup, on float32 buffers: the course's
// own `tcp` backend (built from the learner's lessons 02-05), `gloo` (the real Gloo
// library) and `nccl` (GPUs) all implement it, so a driver or a DDP reducer is written
// once and runs on any of them.
//
// RULES EVERY CALLER MUST KEEP
//  1. Collectives are called in the same order, with the same counts, on every rank of
//     the group. A rank that skips one, or calls them in another order, deadlocks the
//     job or mixes up data; the backends detect mismatched counts where the wire carries
//     them and throw ProtocolError, but they cannot detect every misuse.
//  2. A buffer handed to an asynchronous call (isend, irecv, *_async) must stay
//     alive and untouched until its Work's wait() returns.
//  3. Rooted operations take the same root on every rank.
//
// Buffers and in place: broadcast, reduce and all_reduce work in place on `data`.
// scatter/gather/all_gather/reduce_scatter/all_to_all read `input` and write `output`;
// they are also correct "in place" when input is this rank's slice of output (all_gather,
// gather) or output is this rank's slice of input (reduce_scatter, scatter), as in NCCL.
//
// Sizes (k = elements per rank, N = size()):
//   scatter:        input N*k (root only, ignored elsewhere)  -> output k
//   gather:         input k -> output N*k (root only, may be empty elsewhere)
//   all_gather:     input k -> output N*k; output[r*k .. r*k+k) is rank r's input
//   reduce_scatter: input N*k -> output k; rank r gets the reduction of slice r
//   all_to_all:     input N*k -> output N*k; output slice j is rank j's input slice r
//
// Errors: every call throws course::Error subclasses (ProtocolError for mismatched sizes,
// PeerClosedError when a peer died, TimeoutError past the timeout) naming this rank, the
// peer and the operation.
//
// Thread safety: one thread issues calls on a ProcessGroup; Work objects may be waited
// on from that thread. Backends run asynchronous work on their own threads.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "socket.h"

namespace course {

enum class ReduceOp { SUM, PRODUCT, MIN, MAX, AVG };

/// "sum", "prod", "min", "max", "avg" (nccl-tests' names).
const char* reduce_op_name(ReduceOp op);
/// Parses the names above. Throws ConfigError listing them.
ReduceOp parse_reduce_op(const std::string& name);

/// A handle on an operation running in the background.
class Work {
 public:
  virtual ~Work() = default;
  /// Blocks until the operation has finished. Rethrows the operation's error; throws
  /// TimeoutError when it has not finished within `timeout`.
  virtual void wait(Millis timeout = default_timeout()) = 0;
  /// True once the operation has finished, successfully or not. Never blocks.
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

/// The interface every backend implements: torch.distributed's ProcessGroup on float
/// buffers (the contract and the rules are at the top of this file).
class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  /// This rank, 0 to size() - 1.
  virtual int rank() const = 0;
  /// The number of ranks in the group.
  virtual int size() const = 0;
  /// "tcp", "gloo" or "nccl".
  virtual std::string backend() const = 0;

  // Point to point. A receive names its source and tag; the message must have exactly
  // data.size() elements (ProtocolError naming both sizes and both ranks otherwise).
  /// Sends `data` to rank `dst`; returns when the buffer may be reused.
  virtual void send(std::span<const float> data, int dst, int tag = 0) = 0;
  /// Receives into `data` the message that rank `src` sent with `tag`.
  virtual void recv(std::span<float> data, int src, int tag = 0) = 0;
  /// send() in the background: `data` must stay untouched until the Work's wait() returns.
  virtual WorkPtr isend(std::span<const float> data, int dst, int tag = 0) = 0;
  /// recv() in the background: read `data` only after the Work's wait() returns.
  virtual WorkPtr irecv(std::span<float> data, int src, int tag = 0) = 0;

  // Collectives (see the size table above).
  /// Every rank ends with root's `data`.
  virtual void broadcast(std::span<float> data, int root) = 0;
  /// Rank r gets slice r of root's `input` in `output`.
  virtual void scatter(std::span<const float> input, std::span<float> output, int root) = 0;
  /// Root gets every rank's `input`, rank r's in slice r of `output`.
  virtual void gather(std::span<const float> input, std::span<float> output, int root) = 0;
  /// Returns once every rank of the group has called it.
  virtual void barrier() = 0;
  /// Root's `data` becomes the reduction of every rank's `data`; other ranks' is unspecified.
  virtual void reduce(std::span<float> data, ReduceOp op, int root) = 0;
  /// Every rank's `data` becomes the reduction of every rank's `data`.
  virtual void all_reduce(std::span<float> data, ReduceOp op) = 0;
  /// Every rank gets every rank's `input`, rank r's in slice r of `output`.
  virtual void all_gather(std::span<const float> input, std::span<float> output) = 0;
  /// Rank r gets, in `output`, slice r of the reduction of every rank's `input`.
  virtual void reduce_scatter(std::span<const float> input, std::span<float> output,
                              ReduceOp op) = 0;
  /// Slice j of rank r's `input` becomes slice r of rank j's `output`.
  virtual void all_to_all(std::span<const float> input, std::span<float> output) = 0;

  /// all_reduce in the background (DDP launches one per gradient bucket while backward
  /// runs). Async all-reduces complete in the order they were started.
  virtual WorkPtr all_reduce_async(std::span<float> data, ReduceOp op) = 0;
  /// reduce_scatter in the background (FSDP reduce-scatters each unit's gradients during
  /// backward). The tcp group queues it with its all_reduce_async calls, in call order;
  /// the default runs the blocking call now and returns a completed Work (gloo and nccl:
  /// their blocking calls already run beside the async all-reduces, each on its own tag
  /// or stream).
  virtual WorkPtr reduce_scatter_async(std::span<const float> input, std::span<float> output,
                                       ReduceOp op);
  /// all_gather in the background (FSDP prefetches the next unit's parameters), queued and
  /// defaulted as reduce_scatter_async.
  virtual WorkPtr all_gather_async(std::span<const float> input, std::span<float> output);
};

}  // namespace course
