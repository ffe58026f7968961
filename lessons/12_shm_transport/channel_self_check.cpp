// channel_self_check.cpp: lesson 12, given: the driver's self-check of ShmChannel (see
// channel_self_check.h).
#include "channel_self_check.h"

#include <memory>
#include <vector>

#include "shm_channel.h"

namespace course {

std::string self_check_shm_channel() {
  constexpr uint32_t kSlotBytes = 64, kSlots = 4;
  auto ring = std::make_unique<ShmRingHeader>();
  auto bell = std::make_unique<ShmDoorbell>();
  std::vector<uint64_t> storage(shm_slot_stride(kSlotBytes) * kSlots / sizeof(uint64_t) + 1);
  ShmChannel channel(*ring, reinterpret_cast<char*>(storage.data()), kSlotBytes, kSlots, *bell);
  std::vector<unsigned char> message(1000);
  for (size_t i = 0; i < message.size(); ++i) message[i] = static_cast<unsigned char>(i * 7 + 3);
  const std::string ring_text = "ShmChannel (4 slots of 64 bytes)";

  size_t n = channel.try_write(message.data(), message.size());
  if (n != 256) {
    return ring_text + ": try_write of 1000 bytes into an empty ring returned " +
           std::to_string(n) + ", expected 256 (every free slot filled, 64 bytes each)";
  }
  n = channel.try_write(message.data(), message.size());
  if (n != 0) {
    return ring_text + ": try_write into a full ring returned " + std::to_string(n) +
           ", expected 0: a slot is free only while head - tail < slots";
  }
  if (channel.can_write()) return ring_text + ": can_write() is true on a full ring";
  if (!channel.can_read()) return ring_text + ": can_read() is false on a full ring";

  std::vector<unsigned char> got(1000);
  const size_t first = channel.try_read(got.data(), 100);
  const size_t second = channel.try_read(got.data() + 100, 1000);
  if (first != 100 || second != 156) {
    return ring_text + ": reading a full ring as 100 then 1000 bytes returned " +
           std::to_string(first) + " and " + std::to_string(second) +
           ", expected 100 and 156 (a slot may be read in several calls, read_offset_; each "
           "emptied slot is freed by advancing tail, and read only once)";
  }
  for (size_t i = 0; i < 256; ++i) {
    if (got[i] != message[i]) {
      return ring_text + ": byte " + std::to_string(i) + " read back differs from the one " +
             "written (slot " + std::to_string(i / kSlotBytes) + ", offset " +
             std::to_string(i % kSlotBytes) + "): copy from the slot's payload at read_offset_";
    }
  }
  n = channel.try_read(got.data(), 1000);
  if (n != 0) {
    return ring_text + ": try_read of an empty ring returned " + std::to_string(n) +
           ", expected 0: a slot is full only while tail < head";
  }
  if (channel.can_read()) return ring_text + ": can_read() is true on an empty ring";
  if (!channel.can_write()) {
    return ring_text +
           ": can_write() is false after every slot was read: try_read frees each "
           "emptied slot (tail, a release store)";
  }
  for (int i = 0; i < 4; ++i) {
    n = channel.try_write(message.data(), 1);
    if (n != 1) {
      return ring_text + ": write " + std::to_string(i + 1) + " of 1 byte into a ring with " +
             std::to_string(4 - i) + " free slots returned " + std::to_string(n);
    }
  }
  if (channel.try_write(message.data(), 1) != 0 || channel.can_write()) {
    return ring_text + ": four 1-byte writes (a slot each) should fill the ring";
  }
  return "";
}

}  // namespace course
