// device_pool.cpp: lesson 08, the worker threads behind parallel_apply (given; see
// device_pool.h).
#include "device_pool.h"

#include <string>

#include "error.h"

namespace course {

DevicePool::DevicePool(int devices) : devices_(devices) {
  if (devices < 1) {
    throw ConfigError("DevicePool: " + std::to_string(devices) + " devices; need at least 1");
  }
  workers_.reserve(devices - 1);
  for (int k = 1; k < devices; ++k) workers_.emplace_back([this, k] { worker_loop(k); });
}

DevicePool::~DevicePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

std::vector<std::exception_ptr> DevicePool::run(const std::vector<std::function<void()>>& tasks) {
  if (tasks.size() > static_cast<size_t>(devices_)) {
    throw ConfigError("DevicePool::run: " + std::to_string(tasks.size()) + " tasks for " +
                      std::to_string(devices_) + " devices");
  }
  std::lock_guard<std::mutex> one_run(run_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_ = &tasks;
    errors_.assign(tasks.size(), nullptr);
    pending_ = tasks.empty() ? 0 : static_cast<int>(tasks.size()) - 1;  // the workers' tasks
    generation_ += 1;
  }
  work_ready_.notify_all();
  // Device 0's task, here, while the workers run theirs.
  std::exception_ptr error0;
  if (!tasks.empty()) {
    try {
      tasks[0]();
    } catch (...) {
      error0 = std::current_exception();
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return pending_ == 0; });
  if (!tasks.empty()) errors_[0] = error0;
  tasks_ = nullptr;
  return std::move(errors_);
}

void DevicePool::worker_loop(int device) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    // No task for this device this time. A worker without work may wake only after run()
    // has returned (tasks_ is null again), so it must not touch the tasks at all.
    if (tasks_ == nullptr || static_cast<size_t>(device) >= tasks_->size()) continue;
    const std::function<void()>& task = (*tasks_)[device];
    lock.unlock();
    std::exception_ptr error;
    try {
      task();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    errors_[device] = error;
    if (--pending_ == 0) work_done_.notify_one();
  }
}

}  // namespace course
