// joined_thread.h: a test's second thread whose exception reaches the test.
//
// A std::thread whose body throws calls std::terminate: the whole test binary aborts, and
// on the stubs a COURSE_TODO() thrown in a helper thread would read as a crash instead of
// the TODO it is. JoinedThread keeps the body's exception, join() rethrows it on the
// test's thread, and the destructor joins (without rethrowing) when the test's own thread
// leaves early with an exception of its own.
#pragma once

#include <exception>
#include <functional>
#include <thread>
#include <utility>

namespace course::test {

/// A thread that is always joined and whose exception join() rethrows.
class JoinedThread {
 public:
  /// Starts `body` on a new thread.
  explicit JoinedThread(std::function<void()> body)
      : thread_([this, body = std::move(body)] {
          try {
            body();
          } catch (...) {
            error_ = std::current_exception();
          }
        }) {}
  JoinedThread(const JoinedThread&) = delete;
  JoinedThread& operator=(const JoinedThread&) = delete;
  /// Joins if join() was not called (the body's exception, if any, is dropped then).
  ~JoinedThread() {
    if (thread_.joinable()) thread_.join();
  }
  /// Waits for the body; rethrows what it threw.
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace course::test
