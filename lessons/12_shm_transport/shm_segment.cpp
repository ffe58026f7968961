// shm_segment.cpp: shm_open, ftruncate, mmap, shm_unlink (see shm_segment.h).
#include "shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "error.h"

namespace course {

namespace {

void* map_fd(int fd, size_t bytes, const std::string& name) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    errno = err;
    throw_system_error("mmap of shared-memory segment " + name);
  }
  ::close(fd);  // the mapping keeps the memory; the descriptor is no longer needed
  return p;
}

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

/// Backs every page of the segment now, so that a full /dev/shm is this error and never a
/// SIGBUS at the first write into a page that tmpfs cannot supply.
void reserve(int fd, size_t bytes, const std::string& name) {
  int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));  // returns the error
  while (err == EINTR) err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (err == 0 || err == EOPNOTSUPP || err == EINVAL) return;  // no fallocate here: as before
  ::close(fd);
  if (err == ENOSPC || err == EFBIG) {
    struct statvfs fs {};
    const std::string free_space =
        ::statvfs("/dev/shm", &fs) == 0
            ? mib(static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize)) +
                  " free of " +
                  mib(static_cast<double>(fs.f_blocks) * static_cast<double>(fs.f_frsize))
            : std::string("unknown space free");
    throw ConfigError("/dev/shm has too little space for shared-memory segment " + name +
                      ": it needs " + std::to_string(bytes) + " bytes (" +
                      mib(static_cast<double>(bytes)) + "), and /dev/shm has " + free_space +
                      ". Free some (df -h /dev/shm; remove stale files there), give the "
                      "container more (docker run --shm-size=1g), or pass --transport tcp");
  }
  errno = err;
  throw_system_error("posix_fallocate of shared-memory segment " + name + " (" +
                     std::to_string(bytes) + " bytes)");
}

}  // namespace

ShmSegment ShmSegment::create(const std::string& name, size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw_system_error("shm_open(create) of " + name);
  ShmSegment segment;
  segment.name_ = name;
  segment.owns_name_ = true;  // from here on the destructor unlinks it
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    ::close(fd);
    errno = err;
    throw_system_error(
        "ftruncate of shared-memory segment " + name + " to " + std::to_string(bytes) + " bytes",
        "is /dev/shm full? (df -h /dev/shm)");
  }
  reserve(fd, bytes, name);  // closes fd when it throws; the destructor unlinks the name
  segment.data_ = map_fd(fd, bytes, name);
  segment.size_ = bytes;
  return segment;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw_system_error("shm_open of " + name + " (made by the peer rank)");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    throw ProtocolError("shared-memory segment " + name + " holds " + std::to_string(st.st_size) +
                        " bytes, not the " + std::to_string(bytes) +
                        " its creator announced: a stale segment of another job?");
  }
  ShmSegment segment;
  segment.name_ = name;
  segment.data_ = map_fd(fd, bytes, name);
  segment.size_ = bytes;
  return segment;
}

ShmSegment::~ShmSegment() {
  release();
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      name_(std::move(other.name_)),
      owns_name_(std::exchange(other.owns_name_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    name_ = std::move(other.name_);
    owns_name_ = std::exchange(other.owns_name_, false);
  }
  return *this;
}

void ShmSegment::unlink() noexcept {
  if (!owns_name_) return;
  ::shm_unlink(name_.c_str());
  owns_name_ = false;
}

void ShmSegment::release() noexcept {
  unlink();
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace course
