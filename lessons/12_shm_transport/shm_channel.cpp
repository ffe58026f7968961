// shm_channel.cpp: lesson 12: the slot ring, its doorbell, and the wait that notices a
// dead peer (see shm_channel.h for the layout and the memory-ordering rules).
#include "shm_channel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "error.h"
#include "futex.h"

namespace course {

size_t ShmChannel::try_write(const void* data, size_t n) {
  // TODO(lesson12): fill free slots (head - tail < slots); release-store head after each one
  COURSE_TODO();
}

size_t ShmChannel::try_read(void* data, size_t n) {
  // TODO(lesson12): copy out of full slots (tail < head); release-store tail as each one empties
  COURSE_TODO();
}

bool ShmChannel::can_write() const {
  // TODO(lesson12): a free slot: head - tail < slots
  COURSE_TODO();
}

bool ShmChannel::can_read() const {
  // TODO(lesson12): a full slot: tail < head
  COURSE_TODO();
}

void ring_doorbell(ShmDoorbell& bell) {
  // TODO(lesson12): fence (seq_cst); if anyone sleeps (sleepers > 0), bump seq and futex-wake all
  COURSE_TODO();
}

bool wait_doorbell(ShmDoorbell& mine, const std::function<bool()>& ready, int peer_pid,
                   const std::string& peer, std::chrono::steady_clock::time_point deadline,
                   int spin) {
  // TODO(lesson12): spin; announce, fence, re-check, futex-sleep in slices; check the peer's pid
  COURSE_TODO();
}

}  // namespace course
