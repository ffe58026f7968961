// process_group_nccl_impl.h: the state of an NcclProcessGroup, shared by its two source
// files: process_group_nccl.cpp (the communicator, Work, host staging, the watchdog) and
// process_group_nccl_collectives.cpp (point to point and the collectives).
//
// Locking: `mu` guards the communicator (every NCCL call on it), `pending` and
// `abort_reason`. The caller's thread holds it while it queues an operation; the
// watchdog holds it while it polls. An NcclWorkState has its own mutex for its outcome.
//
// What this is not: public. Only those two files include it.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "error.h"
#include "nccl_check.h"
#include "process_group_nccl.h"

namespace course {

using NcclClock = std::chrono::steady_clock;

/// One queued operation: the event recorded after it, and its outcome.
struct NcclWorkState {
  /// "all_reduce(count 1000, op sum)", for errors.
  std::string what;
  /// Recorded on the group's stream right after the operation.
  cudaEvent_t done = nullptr;
  /// When the watchdog gives up on it.
  NcclClock::time_point deadline;

  std::mutex mu;
  bool finished = false;     // the event fired, or the group was aborted
  std::exception_ptr error;  // set when the group was aborted before it finished

  ~NcclWorkState() {
    if (done) cudaEventDestroy(done);
  }
};

/// Host buffers of one operation, staged through device memory (process_group_nccl.h):
/// each was copied to a fresh device buffer before the operation; outputs are copied back
/// once it has finished. Frees the device buffers when destroyed.
struct NcclStaging {
  struct Entry {
    float* device = nullptr;
    float* host_out = nullptr;  // where to copy the result back; null for inputs
    size_t count = 0;
  };
  std::vector<Entry> entries;

  NcclStaging() = default;
  NcclStaging(const NcclStaging&) = delete;
  NcclStaging& operator=(const NcclStaging&) = delete;
  ~NcclStaging() {
    for (const Entry& e : entries) cudaFree(e.device);
  }
  /// Copies every output back to the host (the operation has finished).
  void copy_back(const std::string& what) const {
    for (const Entry& e : entries) {
      if (e.host_out) {
        check_cuda_call(
            cudaMemcpy(e.host_out, e.device, e.count * sizeof(float), cudaMemcpyDeviceToHost),
            what + ": copying the result back to host memory");
      }
    }
  }
};

/// The Work an NcclProcessGroup hands out (see process_group_nccl.h).
class NcclWork final : public Work {
 public:
  /// `staging` (may be null) holds the operation's host buffers; wait() copies them back.
  NcclWork(std::shared_ptr<NcclWorkState> state, std::shared_ptr<NcclStaging> staging)
      : state_(std::move(state)), staging_(std::move(staging)) {}
  /// Polls the event under `timeout`; rethrows the watchdog's error if the group aborted;
  /// then copies staged outputs back to the host (once).
  void wait(Millis timeout = default_timeout()) override;
  /// True once the event fired or the group was aborted.
  bool is_completed() override;

 private:
  void wait_event(Millis timeout);
  std::shared_ptr<NcclWorkState> state_;
  std::shared_ptr<NcclStaging> staging_;
  std::mutex copy_mu_;
  bool copied_ = false;
};

/// NCCL's reduction for `op` (AVG is ncclAvg, NCCL 2.10 and later).
inline ncclRedOp_t nccl_reduce_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
      return ncclSum;
    case ReduceOp::PRODUCT:
      return ncclProd;
    case ReduceOp::MIN:
      return ncclMin;
    case ReduceOp::MAX:
      return ncclMax;
    case ReduceOp::AVG:
      return ncclAvg;
  }
  throw ConfigError("unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

/// "count 1000", for the operation names in errors.
inline std::string nccl_count_str(size_t n) {
  return "count " + std::to_string(n);
}

/// Runs `body` between ncclGroupStart and ncclGroupEnd (ncclGroupEnd runs even when the
/// body failed); returns the first failure, or what ncclGroupEnd returned.
inline ncclResult_t nccl_grouped(const std::function<ncclResult_t()>& body) {
  const ncclResult_t start = ncclGroupStart();
  if (start != ncclSuccess) return start;
  const ncclResult_t inner = body();
  const ncclResult_t end = ncclGroupEnd();
  return inner != ncclSuccess && inner != ncclInProgress ? inner : end;
}

struct NcclProcessGroup::Impl {
  int rank = 0;
  int world = 1;
  NcclOptions options;

  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // the group's communication stream
  cudaEvent_t ready = nullptr;    // orders the group's stream after the caller's
  float* scratch = nullptr;       // one float of device memory: barrier()'s all-reduce

  std::mutex mu;
  std::vector<std::shared_ptr<NcclWorkState>> pending;
  std::string abort_reason;  // empty while healthy

  std::condition_variable wake;
  bool stopping = false;
  std::thread watchdog;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  /// Stops the watchdog, then releases the communicator (finalize and destroy when idle
  /// within the timeout, abort otherwise), the stream, the event and the scratch float.
  /// Also runs when the constructor failed halfway.
  ~Impl();

  /// Throws NetworkError when the watchdog aborted the group. REQUIRES: mu held.
  void check_not_aborted_locked() const;
  /// The device pointer an operation uses for [p, p + n): p itself when it is CUDA memory
  /// of this group's GPU; for host memory a device copy registered in `staging` (copied
  /// back after the operation when `is_output`). Throws ConfigError for memory of another
  /// GPU. `op` and `name` go into messages: "all_reduce", "data". n == 0 passes p through.
  float* device_ptr(const float* p, size_t n, const std::string& op, const char* name,
                    NcclStaging& staging, bool is_output) const;
  /// Queues `enqueue` (NCCL calls on comm and stream) after the caller's stream, waits
  /// for a non-blocking communicator to accept it, records the Work's event. The Work
  /// keeps `staging` until it is destroyed and copies its outputs back in wait().
  WorkPtr launch(const std::string& what, const std::function<ncclResult_t()>& enqueue,
                 std::shared_ptr<NcclStaging> staging = nullptr);
  /// scatter (root sends slice r of `whole` to rank r, every rank receives `part`) or
  /// gather (the reverse), k floats per rank, as grouped send/recv; waits for it.
  void exchange_with_root(const std::string& what, int root, size_t k, bool scatter, float* whole,
                          float* part, std::shared_ptr<NcclStaging> staging);
  /// Polls ncclCommGetAsyncError until the communicator is no longer ncclInProgress;
  /// past `deadline` aborts the group and throws TimeoutError. REQUIRES: mu held.
  void await_accepted_locked(const std::string& what, NcclClock::time_point deadline);
  /// Aborts the communicator (ncclCommAbort) and fails every pending Work: `culprit` (or
  /// every one, when null) with `error`, the rest with a NetworkError quoting `reason`.
  /// REQUIRES: mu held.
  void abort_locked(const std::string& reason, const std::exception_ptr& error,
                    const NcclWorkState* culprit = nullptr);
  /// The watchdog thread's loop (see process_group_nccl.h).
  void watch();
};

}  // namespace course
