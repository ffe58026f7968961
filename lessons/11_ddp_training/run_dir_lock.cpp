// run_dir_lock.cpp: see run_dir_lock.h.
#include "run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "error.h"

namespace course {

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor drops the flock
}

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

RunDirLock lock_run_dir(const std::string& run_dir) {
  std::filesystem::create_directories(run_dir);
  const std::string path = (std::filesystem::path(run_dir) / ".lock").string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw_system_error("open(" + path + ") to lock the run directory");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {0};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      errno = err;
      throw_system_error("flock(" + path + ")");
    }
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    throw ConfigError(run_dir + " is in use by another run" +
                      (holder.empty() ? std::string() : " (pid " + holder + ")") +
                      ": two runs in one directory would overwrite each other's data, "
                      "checkpoints and curves. Wait for it to end, or pass another --run-dir");
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // the pid is only a courtesy for the message above; the lock itself holds
  }
  return RunDirLock(fd);
}

RunDirLock lock_run_dir(const std::string& run_dir, ProcessGroup& pg) {
  std::vector<float> ok{1};
  RunDirLock lock;
  std::string why;
  if (pg.rank() == 0) {
    try {
      lock = lock_run_dir(run_dir);
    } catch (const Error& e) {
      why = e.detail();
      ok[0] = 0;
    }
  }
  pg.broadcast(ok, 0);
  if (ok[0] == 1) return lock;
  if (pg.rank() == 0) throw ConfigError(why);
  throw ConfigError("rank 0 could not lock the run directory " + run_dir +
                    " (see rank 0's message)");
}

}  // namespace course
