// serial_executor.cpp: see serial_executor.h.
#include "serial_executor.h"

#include <future>

#include "work.h"

namespace course {

struct SerialExecutor::Task {
  std::function<void()> op;
  std::promise<void> done;
};

SerialExecutor::SerialExecutor(std::string name, ErrorHook on_error)
    : name_(std::move(name)), on_error_(std::move(on_error)) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::exception_ptr SerialExecutor::report(std::exception_ptr error) {
  if (!on_error_) return error;
  std::exception_ptr replaced = on_error_(error);
  return replaced ? replaced : error;
}

void SerialExecutor::run_inline(const std::function<void()>& op) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
    busy_ = true;
  }
  std::exception_ptr error;
  try {
    op();
  } catch (...) {
    error = report(std::current_exception());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = false;
  }
  changed_.notify_all();
  if (error) std::rethrow_exception(error);
}

WorkPtr SerialExecutor::submit(std::function<void()> op, std::string what) {
  auto task = std::make_unique<Task>(Task{std::move(op), {}});
  std::shared_future<void> future = task->done.get_future().share();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  }
  changed_.notify_all();
  return std::make_shared<FutureWork>(std::move(future), std::move(what));
}

bool SerialExecutor::idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !busy_;
}

void SerialExecutor::worker_loop() {
  while (true) {
    std::unique_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Invariant 1: a queued task waits for an inline operation that started before it.
      changed_.wait(lock,
                    [&] { return (!queue_.empty() && !busy_) || (stopping_ && queue_.empty()); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    try {
      task->op();
      task->done.set_value();
    } catch (...) {
      task->done.set_exception(report(std::current_exception()));
    }
    task.reset();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

}  // namespace course
