// work.cpp: see work.h.
#include "work.h"

#include <exception>

#include "error.h"

namespace course {

FutureWork::FutureWork(std::shared_future<void> future, std::string what,
                       std::function<void()> before_wait)
    : future_(std::move(future)), what_(std::move(what)), before_wait_(std::move(before_wait)) {}

void FutureWork::wait(Millis timeout) {
  if (before_wait_ && !is_completed()) before_wait_();
  if (future_.wait_for(timeout) != std::future_status::ready) {
    throw TimeoutError(what_ + " has not finished after " + std::to_string(timeout.count()) +
                       " ms. Its peer may be missing the matching call, or waiting on "
                       "something this rank has not done yet (see the lesson 02 README, "
                       "\"ordering deadlocks\"); keep its buffer alive until wait() returns");
  }
  future_.get();  // rethrows the operation's error
}

bool FutureWork::is_completed() {
  return future_.wait_for(Millis(0)) == std::future_status::ready;
}

WorkPtr completed_work() {
  std::promise<void> done;
  done.set_value();
  return std::make_shared<FutureWork>(done.get_future().share(), "a finished operation");
}

void wait_all(const std::vector<WorkPtr>& works, Millis timeout) {
  std::exception_ptr first;
  for (const WorkPtr& work : works) {
    if (!work) continue;
    try {
      work->wait(timeout);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace course
