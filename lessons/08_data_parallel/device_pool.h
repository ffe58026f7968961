// device_pool.h: lesson 08, one worker thread per "device", alive for the whole training
// (given).
//
//   DevicePool pool(4);                                 // threads for devices 0..3
//   std::vector<std::function<void()>> tasks = {...};   // task k runs on device k
//   std::vector<std::exception_ptr> errors = pool.run(tasks);   // waits for all of them
//
// DataParallel's devices are CPU threads here, each with one BLAS thread. Device 0 is the
// thread that calls run(): it drives device 0 anyway (the loss, the optimizer and
// everything else serial happen there), so it runs device 0's task itself while worker
// threads run devices 1..K-1. torch's parallel_apply starts a new thread for every replica
// on every call; a pool that lives across steps is what a C++ runtime does instead, and
// keeping device 0 on the caller saves one thread hand-over per parallel phase.
//
// What this is not: a general task queue. One run() at a time, one task per device.
//
// Thread safety: run() may be called from one thread at a time (a second caller waits).
// Tasks run concurrently, each on its own device's thread; whatever they share must be
// synchronised by them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace course {

class DevicePool {
 public:
  /// Starts a worker thread for each of devices 1..devices-1 (device 0 is the caller).
  /// REQUIRES: devices >= 1 (ConfigError otherwise).
  explicit DevicePool(int devices);
  /// Stops and joins the threads.
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  /// The number of devices.
  int size() const { return devices_; }

  /// Runs tasks[k] on device k's thread for every k < tasks.size(), concurrently (tasks[0]
  /// on the calling thread), and blocks until all have returned. Returns, per task, the exception
  /// it threw (null when it returned normally); the pool stays usable after a failure. REQUIRES:
  /// tasks.size() <= size() (ConfigError otherwise).
  std::vector<std::exception_ptr> run(const std::vector<std::function<void()>>& tasks);

 private:
  void worker_loop(int device);

  std::mutex run_mutex_;  // one run() at a time
  std::mutex mutex_;      // guards the fields below
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::vector<std::function<void()>>* tasks_ = nullptr;
  std::vector<std::exception_ptr> errors_;
  uint64_t generation_ = 0;  // bumped by each run(); a worker runs each generation once
  int pending_ = 0;
  bool stopping_ = false;
  int devices_;
  std::vector<std::thread> workers_;  // workers_[k - 1] runs device k
};

}  // namespace course
