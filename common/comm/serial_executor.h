// serial_executor.h: runs the operations on one resource one at a time, in issue order.
//
// The tcp backend gives every peer two of these, one per direction of its socket
// (tcp_comm.h): a blocking send runs on the caller's thread, an isend on the executor's
// worker thread, and either way the bytes of two messages never interleave and leave in
// the order the calls were made.
//
//   SerialExecutor to_rank1("send to rank 1");
//   to_rank1.run_inline([&] { ... });                      // here, after earlier ones
//   WorkPtr w = to_rank1.submit([=] { ... }, "isend ..."); // on the worker, in order
//   w->wait();
//
// INVARIANTS
//  1. Operations run one at a time, in the order run_inline/submit were called: run_inline
//     first waits until every operation submitted before it has finished.
//  2. The worker thread starts on the first submit(), so a program that only makes
//     blocking calls never starts a thread (and pays no thread hand-off on its fast path).
//  3. When an operation throws, on_error (if set) is called with the error on the thread
//     that ran it, before the caller (run_inline) or the Work (submit) sees it, and what
//     it returns is what they see (it may return the error itself, or a clearer one).
//     The executor itself carries on with the next operation.
//  4. An operation submitted with run_on_wait runs on the thread that waits for its Work
//     when that wait comes before the worker has started it: the waiter takes it (and any
//     still queued before it, in order) from the queue and runs it itself. A thread that
//     would only sleep until the worker woke up, was scheduled and ran the operation does
//     the work at once, without the hand-off (lesson 10's reducer waits like this for the
//     bucket it launched last). Such a wait returns when the operation does: the
//     operation's own timeouts bound it, not the wait's.
//
// What this is not: a thread pool. One resource, one worker, strict order.
//
// Thread safety: every method may be called from any thread. The destructor lets the
// worker finish every queued operation, then joins it; whoever owns the resource must
// make pending operations fail fast first (TcpComm shuts its sockets down).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "process_group.h"

namespace course {

/// Runs operations one at a time, in the order they were given (see the invariants above).
class SerialExecutor {
 public:
  /// Called with an operation's error; returns the error to report (see invariant 3).
  using ErrorHook = std::function<std::exception_ptr(std::exception_ptr error)>;

  /// `name` appears in errors ("send to rank 1"); `on_error` see invariant 3.
  explicit SerialExecutor(std::string name, ErrorHook on_error = {});
  ~SerialExecutor();
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  /// Runs `op` on the calling thread once every earlier operation has finished, and
  /// returns when it has. Rethrows its error.
  /// REQUIRES: not called from inside an operation of this same executor (it would wait
  /// for itself forever).
  void run_inline(const std::function<void()>& op);

  /// Queues `op` behind every earlier operation and returns at once. The Work completes
  /// when `op` has run on the worker thread (or, with run_on_wait, on a waiting thread:
  /// invariant 4); its wait() rethrows op's error. `what` names the operation in the
  /// Work's TimeoutError.
  WorkPtr submit(std::function<void()> op, std::string what, bool run_on_wait = false);

  /// True when no operation is queued or running. Never blocks.
  bool idle();

  /// The name given at construction.
  const std::string& name() const;

 private:
  struct Task;
  struct State;  // what the worker and the Works of run_on_wait share (they may outlive us)
  static void run_task(State& state, std::unique_ptr<Task> task);
  static void run_queued_through(State& state, uint64_t seq);

  std::shared_ptr<State> state_;
  std::thread worker_;
};

}  // namespace course
