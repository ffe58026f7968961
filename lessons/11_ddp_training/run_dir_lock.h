// run_dir_lock.h: lesson 11, one run at a time in a run directory (given).
//
//   const RunDirLock lock = lock_run_dir(o.run_dir, pg);   // every rank, at start-up
//
// Two runs started in one directory would write the same prepared data, checkpoints and
// curves, each overwriting the other's. Rank 0 takes an exclusive flock() on
// "<run-dir>/.lock" for the whole run (the kernel drops it when the process ends, however
// it ends, so a crashed run never leaves a stale lock) and writes its pid there; a second
// run is refused on every rank with a ConfigError naming the directory and the holder.
//
// What this is not: a lock across machines (flock on a network file system may not hold),
// nor a lock of --checkpoint-dir when it lies outside the run directory.
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// The held lock (rank 0), or nothing (other ranks). Move-only; released when destroyed.
class RunDirLock {
 public:
  RunDirLock() = default;
  explicit RunDirLock(int fd) : fd_(fd) {}
  ~RunDirLock();
  RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

/// Rank 0 only: creates `run_dir` and locks it. Throws ConfigError when another process
/// holds the lock ("... is in use by another run (pid 4242): wait for it to end, or pass
/// another --run-dir").
RunDirLock lock_run_dir(const std::string& run_dir);

/// Collective: rank 0 locks `run_dir` as above; when it cannot, every rank throws
/// ConfigError (rank 0 with the reason, the others pointing to rank 0's message).
RunDirLock lock_run_dir(const std::string& run_dir, ProcessGroup& pg);

}  // namespace course
