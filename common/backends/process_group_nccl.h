// process_group_nccl.h: the `nccl` backend, the process-group interface on GPUs.
//
// NcclProcessGroup implements every call of process_group.h with NVIDIA's NCCL, the
// library behind torch.distributed's "nccl" backend. Buffers are CUDA memory of this
// rank's GPU (Tensor::device_span() of a Device::cuda tensor), or small host buffers,
// staged (below); one rank per GPU.
//
//   NcclOptions options;
//   options.device = local_rank;                   // the GPU this rank drives
//   NcclProcessGroup pg(store, rank, world, options);
//   pg.all_reduce(grad.device_span(), ReduceOp::SUM);
//
// How it works:
//   rendezvous   rank 0 makes an ncclUniqueId and publishes it in the course's store; every
//                rank reads it and creates a non-blocking communicator
//                (ncclCommInitRankConfig, blocking = 0), polling ncclCommGetAsyncError
//                until it is ready, under the timeout
//   one stream   every operation is queued on the group's own CUDA stream, after the work
//                already queued on the caller's (default) stream, so a gradient is reduced
//                only once backward has written it
//   Work         a CUDA event recorded after the operation; wait() polls it under the
//                timeout; the blocking calls are the asynchronous ones, then wait()
//   collectives  broadcast, reduce, all_reduce, all_gather, reduce_scatter are NCCL's own;
//                scatter, gather, all_to_all are grouped ncclSend/ncclRecv
//                (ncclGroupStart/End); barrier is a one-element all_reduce
//   watchdog     a thread polls every pending operation and the communicator: an operation
//                unfinished past the timeout, or an asynchronous NCCL error, aborts the
//                communicator (ncclCommAbort) and fails every pending Work with
//                TimeoutError / Error naming the rank and the operation; every later call
//                fails at once. A stuck peer becomes an error, never a silent hang (torch's
//                NCCL watchdog does the same).
//
// Host memory: staged. A buffer in host memory (a CPU tensor's span: BatchNorm statistics,
// DDP's used-parameter flags, a checkpoint's tensors) is copied to a fresh device buffer
// before the operation and, for outputs, back after it, in the Work's wait(), as torch's
// Gloo backend does for CUDA tensors the other way round. It costs two copies and an
// allocation per call: fine for a few kilobytes, never for gradients, which live on the
// GPU. Memory of another GPU is a ConfigError (found with cudaPointerGetAttributes).
// Point to point: NCCL has no tags; messages between two ranks match in the order they
// were issued, so the tag is checked for range and otherwise ignored. NCCL does not carry
// counts either: sizes checked here are this rank's (collective_checks.h); a mismatch
// between ranks is a hang that the watchdog turns into a TimeoutError.
//
// Errors: ConfigError (bad arguments, another GPU's memory, a GPU that does not exist),
// TimeoutError (rendezvous or an operation past the timeout), NetworkError / SystemError
// (NCCL or CUDA failures, nccl_check.h). After an abort every call throws.
//
// What this is not: a CPU backend, or a way to share one GPU among ranks (NCCL refuses
// two ranks on one device). Compiled only when CMake found CUDA and NCCL
// (COURSE_HAVE_NCCL); make_process_group("nccl", ...) is the way drivers reach it.
//
// Thread safety: as ProcessGroup: one thread issues calls; Work may be waited on from any
// thread. The watchdog is the group's only other thread.
#pragma once

#include <memory>
#include <string>

#include "process_group.h"
#include "rank_names.h"
#include "store.h"

namespace course {

/// How an NcclProcessGroup connects and which GPU it drives.
struct NcclOptions {
  /// Store key prefix for the unique id; two groups in one job need two prefixes.
  std::string prefix = "nccl";
  /// The CUDA device of this rank (usually LOCAL_RANK); -1 keeps the current device.
  int device = -1;
  /// Bounds the rendezvous and every operation (the watchdog's limit).
  Millis timeout = default_timeout();
  /// How often the watchdog looks at pending operations and the communicator.
  Millis watchdog_interval = Millis(20);
  /// How errors name the ranks: a subgroup's names them by world rank (rank_names.h).
  RankNames names;
};

/// The `nccl` backend: every ProcessGroup call on NCCL, on CUDA buffers (see above).
class NcclProcessGroup : public ProcessGroup {
 public:
  /// Selects options.device, exchanges the unique id through `store` (only inside the
  /// constructor) and creates the communicator. Every rank of the group must construct it
  /// with the same world and prefix. Throws ConfigError for a bad rank or device,
  /// TimeoutError when a rank does not show up within options.timeout.
  NcclProcessGroup(StoreClient& store, int rank, int world, NcclOptions options = {});
  /// Stops the watchdog and releases the communicator (aborting it if work is pending).
  ~NcclProcessGroup() override;
  NcclProcessGroup(const NcclProcessGroup&) = delete;
  NcclProcessGroup& operator=(const NcclProcessGroup&) = delete;

  int rank() const override;
  int size() const override;
  std::string backend() const override { return "nccl"; }
  /// The CUDA device this group's buffers must live on.
  int device() const;

  void send(std::span<const float> data, int dst, int tag = 0) override;
  void recv(std::span<float> data, int src, int tag = 0) override;
  WorkPtr isend(std::span<const float> data, int dst, int tag = 0) override;
  WorkPtr irecv(std::span<float> data, int src, int tag = 0) override;

  void broadcast(std::span<float> data, int root) override;
  void scatter(std::span<const float> input, std::span<float> output, int root) override;
  void gather(std::span<const float> input, std::span<float> output, int root) override;
  void barrier() override;
  void reduce(std::span<float> data, ReduceOp op, int root) override;
  void all_reduce(std::span<float> data, ReduceOp op) override;
  void all_gather(std::span<const float> input, std::span<float> output) override;
  void reduce_scatter(std::span<const float> input, std::span<float> output, ReduceOp op) override;
  void all_to_all(std::span<const float> input, std::span<float> output) override;
  WorkPtr all_reduce_async(std::span<float> data, ReduceOp op) override;

  /// The watchdog's verdict so far: empty while healthy, else why the group was aborted.
  std::string abort_reason() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace course
