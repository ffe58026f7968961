// process_group_nccl_impl.h: the state of an NcclProcessGroup, shared by its two source
// files: process_group_nccl.cpp (the communicator, Work, the watchdog, point to point)
// and process_group_nccl_collectives.cpp (the collectives).
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

/// The Work an NcclProcessGroup hands out (see process_group_nccl.h).
class NcclWork final : public Work {
 public:
  explicit NcclWork(std::shared_ptr<NcclWorkState> state) : state_(std::move(state)) {}
  /// Polls the event under `timeout`; rethrows the watchdog's error if the group aborted.
  void wait(Millis timeout = default_timeout()) override;
  /// True once the event fired or the group was aborted.
  bool is_completed() override;

 private:
  std::shared_ptr<NcclWorkState> state_;
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

  /// Throws NetworkError when the watchdog aborted the group. REQUIRES: mu held.
  void check_not_aborted_locked() const;
  /// Throws ConfigError unless [p, p + n) is CUDA memory of this group's device (n == 0
  /// passes). `op` and `name` go into the message: "all_reduce", "data".
  void check_buffer(const void* p, size_t n, const std::string& op, const char* name) const;
  /// Queues `enqueue` (NCCL calls on comm and stream) after the caller's stream, waits
  /// for a non-blocking communicator to accept it, records the Work's event.
  WorkPtr launch(const std::string& what, const std::function<ncclResult_t()>& enqueue);
  /// Polls ncclCommGetAsyncError until the communicator is no longer ncclInProgress;
  /// past `deadline` aborts the group and throws TimeoutError. REQUIRES: mu held.
  void await_accepted_locked(const std::string& what, NcclClock::time_point deadline);
  /// Aborts the communicator (ncclCommAbort) and fails every pending Work: `culprit` (or
  /// every one, when null) with `error`, the rest with a NetworkError quoting `reason`.
  /// REQUIRES: mu held.
  void abort_locked(const std::string& reason, std::exception_ptr error,
                    const NcclWorkState* culprit = nullptr);
  /// The watchdog thread's loop (see process_group_nccl.h).
  void watch();
};

}  // namespace course
