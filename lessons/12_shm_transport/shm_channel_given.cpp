// shm_channel_given.cpp: lesson 12: the given half of shm_channel.h: the segment's layout
// (slot stride, pair size, a slot's length word), the channel's constructor, the /proc
// check that tells whether a peer still runs and the error when it does not. The exercise
// is in shm_channel.cpp.
#include <cstring>
#include <fstream>
#include <string>

#include "error.h"
#include "shm_channel.h"

namespace course {

uint64_t shm_slot_length(const char* slot) {
  uint64_t n;
  std::memcpy(&n, slot, sizeof(n));
  return n;
}

void shm_set_slot_length(char* slot, uint64_t n) {
  std::memcpy(slot, &n, sizeof(n));
}

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

void throw_peer_gone(const std::string& peer, int pid) {
  throw PeerClosedError(peer + " (pid " + std::to_string(pid) +
                        ") is gone: it exited or crashed without closing its end of the "
                        "shared-memory channel; see that rank's output");
}

}  // namespace course
