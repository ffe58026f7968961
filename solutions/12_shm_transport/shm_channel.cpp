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
  // BEGIN SOLUTION: fill free slots (head - tail < slots); release-store head after each one
  const char* src = static_cast<const char*>(data);
  uint64_t head = ring_.head.load(std::memory_order_relaxed);  // only we write it
  // acquire: the consumer's copies out of the slots it freed happen before our overwrite.
  const uint64_t tail = ring_.tail.load(std::memory_order_acquire);
  size_t done = 0;
  while (done < n && head - tail < slot_count_) {
    char* s = slot(head);
    const size_t k = std::min(n - done, size_t{slot_bytes_});
    std::memcpy(s + kShmSlotPayload, src + done, k);
    shm_set_slot_length(s, k);
    ++head;
    // release: the payload and length above are visible to whoever sees this head.
    ring_.head.store(head, std::memory_order_release);
    done += k;
  }
  if (done > 0) ring_doorbell(peer_bell_);
  return done;
  // END SOLUTION
}

size_t ShmChannel::try_read(void* data, size_t n) {
  // BEGIN SOLUTION: copy out of full slots (tail < head); release-store tail as each one empties
  char* dst = static_cast<char*>(data);
  uint64_t tail = ring_.tail.load(std::memory_order_relaxed);  // only we write it
  // acquire: pairs with the producer's release; the slots below head are filled.
  const uint64_t head = ring_.head.load(std::memory_order_acquire);
  size_t done = 0;
  bool freed = false;
  while (done < n && tail < head) {
    char* s = slot(tail);
    const size_t length = shm_slot_length(s);
    const size_t k = std::min(n - done, length - read_offset_);
    std::memcpy(dst + done, s + kShmSlotPayload + read_offset_, k);
    read_offset_ += k;
    done += k;
    if (read_offset_ == length) {
      read_offset_ = 0;
      ++tail;
      // release: our copy out of the slot is done before the producer may refill it.
      ring_.tail.store(tail, std::memory_order_release);
      freed = true;
    }
  }
  if (freed) ring_doorbell(peer_bell_);
  return done;
  // END SOLUTION
}

bool ShmChannel::can_write() const {
  // BEGIN SOLUTION: a free slot: head - tail < slots
  return ring_.head.load(std::memory_order_relaxed) - ring_.tail.load(std::memory_order_acquire) <
         slot_count_;
  // END SOLUTION
}

bool ShmChannel::can_read() const {
  // BEGIN SOLUTION: a full slot: tail < head
  return ring_.tail.load(std::memory_order_relaxed) < ring_.head.load(std::memory_order_acquire);
  // END SOLUTION
}

void ring_doorbell(ShmDoorbell& bell) {
  // BEGIN SOLUTION: fence (seq_cst); if anyone sleeps (sleepers > 0), bump seq and futex-wake all
  // Store (the counter, by our caller) then load (sleepers): only a full fence keeps the load
  // from passing the store (shm_channel.h, MEMORY ORDERING).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (bell.sleepers.load(std::memory_order_relaxed) == 0) return;  // nobody to wake: no syscall
  bell.seq.fetch_add(1, std::memory_order_release);
  futex_wake_all(bell.seq);
  // END SOLUTION
}

bool wait_doorbell(ShmDoorbell& mine, const std::function<bool()>& ready, int peer_pid,
                   const std::string& peer, std::chrono::steady_clock::time_point deadline,
                   int spin) {
  // BEGIN SOLUTION: spin; announce, fence, re-check, futex-sleep in slices; check the peer's pid
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < spin; ++i) {
    if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  auto next_check = Clock::now() + kShmLivenessPeriod;
  for (;;) {
    const uint32_t seq = mine.seq.load(std::memory_order_acquire);
    mine.sleepers.fetch_add(1, std::memory_order_relaxed);
    // Store (sleepers) then load (the ring, in ready()): the other half of the Dekker pair.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (ready()) {
      mine.sleepers.fetch_sub(1, std::memory_order_relaxed);
      return true;
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      mine.sleepers.fetch_sub(1, std::memory_order_relaxed);
      return false;
    }
    if (now >= next_check) {
      next_check = now + kShmLivenessPeriod;
      if (!process_alive(peer_pid)) {
        mine.sleepers.fetch_sub(1, std::memory_order_relaxed);
        if (ready()) return true;  // written before it died: the death is seen after
        throw_peer_gone(peer, peer_pid);
      }
    }
    const auto slice = std::min(deadline, next_check) - now;
    futex_wait(mine.seq, seq,
               std::chrono::duration_cast<std::chrono::microseconds>(slice) +
                   std::chrono::microseconds(1));
    mine.sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
  // END SOLUTION
}

}  // namespace course
