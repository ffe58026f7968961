// channel_self_check.cpp: lesson 12, given: the driver's self-check of ShmChannel (see
// channel_self_check.h).
#include "channel_self_check.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "shm_channel.h"

namespace course {

std::string self_check_shm_channel() {
  constexpr uint32_t kSlotBytes = 64, kSlots = 4;
  auto ring = std::make_unique<ShmRingHeader>();
  auto bell = std::make_unique<ShmDoorbell>();
  // The ring, then as many bytes again of a known pattern: a write past the ring's last
  // slot lands there, seen, instead of in someone else's memory.
  const size_t ring_bytes = shm_slot_stride(kSlotBytes) * kSlots;
  std::vector<uint64_t> storage(2 * ring_bytes / sizeof(uint64_t) + 1);
  char* const slots = reinterpret_cast<char*>(storage.data());
  std::fill(slots + ring_bytes, slots + 2 * ring_bytes, static_cast<char>(0xA5));
  const auto past_the_end_intact = [&] {
    return std::all_of(slots + ring_bytes, slots + 2 * ring_bytes,
                       [](char c) { return c == static_cast<char>(0xA5); });
  };
  ShmChannel channel(*ring, slots, kSlotBytes, kSlots, *bell);
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

  // A message that wraps: head at 9 (slot 1), 200 bytes go to slots 1, 2, 3, then 0.
  n = channel.try_read(got.data(), 1000);
  size_t one = channel.try_write(message.data(), 1);
  one += channel.try_read(got.data(), 1);
  if (n != 4 || one != 2) {
    return ring_text + ": four 1-byte slots read as " + std::to_string(n) +
           " byte(s), expected 4; then a write and a read of 1 byte moved " + std::to_string(one) +
           " of 2";
  }
  const std::string wrap_text =
      ring_text + ": a 200-byte message written from slot 1 (slots 1, 2, 3, then 0 again)";
  n = channel.try_write(message.data(), 200);
  if (!past_the_end_intact()) {
    return "ShmChannel::try_write: " + wrap_text +
           " wrote past the ring's last slot: the slot after slot 3 is slot 0; take each "
           "slot's address from slot(head), which wraps (head % slots)";
  }
  if (n != 200) {
    return "ShmChannel::try_write: " + wrap_text + " returned " + std::to_string(n) +
           ", expected 200 (four free slots)";
  }
  n = channel.try_read(got.data(), 1000);
  size_t wrong = n;
  for (size_t i = 0; i < std::min<size_t>(n, 200); ++i) {
    if (got[i] != message[i]) {
      wrong = i;
      break;
    }
  }
  if (n != 200 || wrong != 200) {
    return wrap_text + " read back as " + std::to_string(n) + " byte(s)" +
           (wrong < n ? ", byte " + std::to_string(wrong) + " (slot " +
                            std::to_string((1 + wrong / kSlotBytes) % kSlots) + ") wrong"
                      : "") +
           ", expected the 200 bytes written: ShmChannel::try_write and try_read take each "
           "slot from slot(index), which wraps to slot 0 after slot 3";
  }
  return "";
}

}  // namespace course
