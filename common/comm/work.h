// work.h: the Work handles the course's own code hands out (process_group.h declares Work).
//
//   FutureWork      finished by whoever holds the matching std::promise<void>; this is
//                   what SerialExecutor::submit returns, so lesson 02's isend/irecv, the
//                   tcp backend's all_reduce_async and lesson 10's reducer all hand out
//                   the same kind of handle
//   completed_work  a Work that has already finished (nothing to move, a world of one)
//   wait_all        waits for many, then rethrows the first error
//
// What this is not: a thread pool or a scheduler. Whoever fulfils the promise runs the
// operation (serial_executor.h is the usual one).
//
// Thread safety: wait() and is_completed() may be called from any thread, any number of
// times; every wait() of a failed operation rethrows the same error.
#pragma once

#include <functional>
#include <future>
#include <string>
#include <vector>

#include "process_group.h"

namespace course {

/// A Work finished by whoever holds the matching promise (see the top of this file).
class FutureWork final : public Work {
 public:
  /// `what` names the operation in a TimeoutError: "isend to rank 1 (tag 0, 4 elements)".
  /// `before_wait`, when given, is called at the start of every wait() (SerialExecutor's
  /// run_on_wait: the waiter runs the operation itself if nobody has started it).
  FutureWork(std::shared_future<void> future, std::string what,
             std::function<void()> before_wait = {});

  /// Blocks until the operation has finished or `timeout` has passed. Throws
  /// TimeoutError naming the operation when it has not finished (it keeps running: wait
  /// again, and keep its buffer alive until a wait() returns). Rethrows the operation's
  /// own error when it failed.
  void wait(Millis timeout = default_timeout()) override;
  /// True once the operation has finished, successfully or not. Never blocks.
  bool is_completed() override;

 private:
  std::shared_future<void> future_;
  std::string what_;
  std::function<void()> before_wait_;
};

/// A Work that has already finished successfully.
WorkPtr completed_work();

/// Waits for every Work in `works`, in order, each under `timeout`. It waits for all of
/// them even after one fails, so that when it returns (or throws) no operation is still
/// using its buffer; then it rethrows the first error. Null entries are skipped.
void wait_all(const std::vector<WorkPtr>& works, Millis timeout = default_timeout());

}  // namespace course
