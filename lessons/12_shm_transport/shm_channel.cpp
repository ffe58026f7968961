// shm_channel.cpp: lesson 12: the slot ring, its doorbell, and the wait that notices a
// dead peer (see shm_channel.h for the layout and the memory-ordering rules).
#include "shm_channel.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <string>

#include "error.h"
#include "futex.h"

namespace course {

namespace {

// How often a sleeping waiter wakes to see whether its peer still runs.
constexpr std::chrono::milliseconds kLivenessPeriod{100};

// A slot: its length (how many payload bytes the producer put in) in the first 8 bytes,
// the payload from the next cache line on.
constexpr size_t kSlotPayload = kShmCacheLine;

[[maybe_unused]] uint64_t slot_length(const char* slot) {
  uint64_t n;
  std::memcpy(&n, slot, sizeof(n));
  return n;
}

[[maybe_unused]] void set_slot_length(char* slot, uint64_t n) {
  std::memcpy(slot, &n, sizeof(n));
}

}  // namespace

size_t shm_slot_stride(uint32_t slot_bytes) {
  const size_t bytes = kShmCacheLine + size_t{slot_bytes};
  return (bytes + kShmCacheLine - 1) / kShmCacheLine * kShmCacheLine;
}

size_t shm_pair_bytes(uint32_t slot_bytes, uint32_t slots) {
  const size_t header = (sizeof(ShmPairHeader) + kShmCacheLine - 1) / kShmCacheLine * kShmCacheLine;
  return header + 2 * size_t{slots} * shm_slot_stride(slot_bytes);
}

ShmChannel::ShmChannel(ShmRingHeader& ring, char* slots, uint32_t slot_bytes, uint32_t slot_count,
                       ShmDoorbell& peer_bell)
    : ring_(ring),
      slots_(slots),
      slot_bytes_(slot_bytes),
      slot_count_(slot_count),
      peer_bell_(peer_bell) {}

char* ShmChannel::slot(uint64_t index) const {
  return slots_ + (index % slot_count_) * shm_slot_stride(slot_bytes_);
}

size_t ShmChannel::try_write(const void* data, size_t n) {
  // TODO(lesson12): fill free slots (head - tail < slots), publish each with a release store of
  COURSE_TODO();
}

size_t ShmChannel::try_read(void* data, size_t n) {
  // TODO(lesson12): copy out of full slots (tail < head, acquire), free each emptied slot with a
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
  // TODO(lesson12): seq_cst fence between our counter store and the sleepers load, then bump seq
  COURSE_TODO();
}

bool process_alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return false;
  // "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parens).
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  const char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

bool wait_doorbell(ShmDoorbell& mine, const std::function<bool()>& ready, int peer_pid,
                   const std::string& peer, std::chrono::steady_clock::time_point deadline,
                   int spin) {
  // TODO(lesson12): spin, then announce (sleepers), fence, re-check, futex-sleep in slices; check
  COURSE_TODO();
}

}  // namespace course
