// shm_segment.h: a POSIX shared-memory segment, created, mapped and unlinked (RAII).
//
// shm_open gives a named file in /dev/shm (memory, not disk); mmap with MAP_SHARED maps the
// same pages into every process that opens the name. The name is only needed until both
// processes have mapped it: unlink() then removes it from /dev/shm, the mapping stays
// valid, and the memory goes back to the system when the last process unmaps it or dies.
// Unlinking early is what keeps a crash from leaving files behind in /dev/shm.
//
//   ShmSegment mine = ShmSegment::create("/course.1234.0-1", bytes);   // zero-filled
//   ShmSegment theirs = ShmSegment::open("/course.1234.0-1", bytes);   // other process
//   ... both mapped ...  mine.unlink();
//
// What this is not: a protocol. What lies in the memory is shm_channel.h's business.
//
// Thread safety: none needed: one owner; the memory itself is shared by design.
#pragma once

#include <cstddef>
#include <string>

namespace course {

/// One mapped POSIX shared-memory segment (see the top of this file). Move-only.
class ShmSegment {
 public:
  ShmSegment() = default;
  /// Creates `name` (it must not exist), sizes it to `bytes` (zero-filled), backs every
  /// page (posix_fallocate: a full /dev/shm fails here, never as a SIGBUS on first touch)
  /// and maps it. Throws ConfigError when /dev/shm has too little room (saying how much was
  /// needed, how much is free, and what to do), SystemError for other failures.
  static ShmSegment create(const std::string& name, size_t bytes);
  /// Opens and maps `name`, made by another process; its size must be `bytes`.
  /// Throws SystemError when it is missing, ProtocolError when its size differs.
  static ShmSegment open(const std::string& name, size_t bytes);
  /// Unmaps, and unlinks the name if this side created it and has not unlinked it yet.
  ~ShmSegment();
  /// Takes other's mapping; other is left empty.
  ShmSegment(ShmSegment&& other) noexcept;
  /// Releases this mapping, then takes other's.
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  /// Removes the name from /dev/shm (the mapping stays). Idempotent; never throws.
  void unlink() noexcept;

  /// The first byte of the mapping (page-aligned), or null.
  void* data() const { return data_; }
  /// The mapping's length in bytes.
  size_t size() const { return size_; }
  /// "/course.1234.0-1".
  const std::string& name() const { return name_; }

 private:
  void release() noexcept;

  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool owns_name_ = false;  // created here and not yet unlinked
};

}  // namespace course
