// shm_channel.h: lesson 12: a one-way channel of fixed-size slots in shared memory.
//
// Two ranks on one machine share one segment (shm_segment.h) holding two rings, one per
// direction. A ring is `slots` slots of `slot_bytes` bytes, and two counters that only
// grow: head (slots the producer has filled, written by the producer alone) and tail
// (slots the consumer has emptied, written by the consumer alone). Slot i lives at index
// i % slots.
//
//                 tail = 5                   head = 8
//                    v                          v
//   slots:  [ 8 free | 5 full | 6 full | 7 full | 4 free ]   (slots = 5; 5, 6, 7 are full)
//           index 0     1        2        3        4
//
//   producer: while head - tail < slots: fill slot head % slots, then head = head + 1
//   consumer: while tail < head:         empty slot tail % slots, then tail = tail + 1
//
// Each side writes one counter and reads the other, so no lock is needed and producer
// and consumer never touch the same slot at the same time: a full slot belongs to the
// consumer, a free one to the producer, and the counters hand slots over.
//
// MEMORY ORDERING (the fences, and why):
//  - Producer: fill the slot (payload and its length, plain stores), THEN
//    head.store(release). Release orders the slot's stores before the counter's: a
//    consumer that sees the new head sees the bytes. Without it (relaxed, or a plain
//    store) the CPU or the compiler may make head visible first, and the consumer copies
//    out a slot that still holds the previous round's bytes: a silently wrong result
//    (x86 keeps stores in order, so there it is the compiler that reorders; ARM does both).
//  - Consumer: head.load(acquire) before reading slots: it pairs with that release (no
//    read of the slot may happen before the load that says it is full).
//  - Consumer: copy out of the slot, THEN tail.store(release); producer: tail.load(acquire)
//    before overwriting. Without this pair the producer may refill a slot the consumer is
//    still copying from.
//  - Sleeping (the doorbell): the waiter announces itself (sleepers += 1), then re-checks
//    the ring; the waker publishes (head or tail), then looks for sleepers. Each side does
//    a store then a load of the other's location: release/acquire do not order a store
//    before a later load, so both put a seq_cst fence between them (store-load ordering,
//    Dekker's pattern). Without it both may read the old values: the waiter sleeps
//    because it missed the new head, the waker skips the wake because it missed the
//    sleeper, and the rank sleeps until its timeout.
//
// WAITING: a ready slot usually arrives within microseconds, so a waiter first spins
// (re-checks `spin` times) and only then sleeps on its doorbell (futex.h), which costs two
// system calls and a context switch but frees the core. When there are more ranks than
// cores, spinning only steals the core from the rank it waits for: spin 0 (shm_tuning.h).
//
// PEER DEATH: a crashed peer never rings. A sleeping waiter wakes at least every 100 ms
// and looks at /proc/<pid> of the peer (a zombie counts as dead); once it is gone the wait
// throws PeerClosedError naming the rank, within about 100 ms, instead of waiting forever.
//
// What this is not: a stream. A channel moves bytes one way; shm_stream.h joins two of
// them into a ByteStream, with closing and timeouts.
//
// Thread safety: one producer thread and one consumer thread per channel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace course {

/// Bytes of a CPU cache line: counters written by different processes live on different
/// lines, or every write would bounce the other side's line (false sharing).
inline constexpr size_t kShmCacheLine = 64;

/// One direction's counters, in shared memory (see the top of this file).
struct ShmRingHeader {
  alignas(kShmCacheLine) std::atomic<uint64_t> head{0};  ///< slots filled (producer writes)
  alignas(kShmCacheLine) std::atomic<uint64_t> tail{0};  ///< slots emptied (consumer writes)
};

/// What a side sleeps on: the peer bumps `seq` and wakes it when `sleepers` > 0.
struct ShmDoorbell {
  alignas(kShmCacheLine) std::atomic<uint32_t> seq{0};  ///< the futex word
  std::atomic<uint32_t> sleepers{0};  ///< threads of this side asleep or about to be
};

/// The front of a pair's segment; the slots of ring 0, then of ring 1, follow.
struct ShmPairHeader {
  uint64_t magic = 0;                        ///< kShmMagic once initialised
  uint32_t slot_bytes = 0;                   ///< payload bytes per slot
  uint32_t slots = 0;                        ///< slots per ring
  int32_t pid[2] = {0, 0};                   ///< the process of each side (side 0: the lower rank)
  std::atomic<uint32_t> closed[2] = {0, 0};  ///< side s has closed or shut down its end
  ShmDoorbell bell[2];                       ///< bell[s]: what side s sleeps on
  ShmRingHeader ring[2];                     ///< ring[s]: from side s to side 1 - s
};

/// "SHMRING1" as a little-endian u64.
inline constexpr uint64_t kShmMagic = 0x31474e49524d4853ULL;

/// Bytes from one slot to the next: an 8-byte length, the payload, padded to a cache line.
size_t shm_slot_stride(uint32_t slot_bytes);
/// The segment size for a pair of rings of `slots` slots of `slot_bytes` bytes.
size_t shm_pair_bytes(uint32_t slot_bytes, uint32_t slots);

/// Where a slot's payload starts: its first cache line holds the length (8 bytes) alone.
inline constexpr size_t kShmSlotPayload = kShmCacheLine;
/// How many payload bytes the producer put in `slot` (read from its first 8 bytes).
uint64_t shm_slot_length(const char* slot);
/// Writes `n`, the payload bytes of `slot`, into its first 8 bytes.
void shm_set_slot_length(char* slot, uint64_t n);
/// How often a waiter looks whether its peer still runs (wait_doorbell, ShmStream).
inline constexpr std::chrono::milliseconds kShmLivenessPeriod{100};

/// One endpoint's view of one ring: the producer calls try_write, the consumer try_read.
class ShmChannel {
 public:
  /// `ring` and `slots` (its first slot) in the segment; `peer_bell` is rung after every
  /// call that moved bytes (the other side may sleep waiting for them).
  ShmChannel(ShmRingHeader& ring, char* slots, uint32_t slot_bytes, uint32_t slot_count,
             ShmDoorbell& peer_bell);

  /// Producer: copies up to n bytes into free slots (at most slot_bytes per slot), making
  /// each slot visible as it is filled; returns how many bytes went in (0: the ring is
  /// full). Rings the peer's doorbell when it moved any.
  size_t try_write(const void* data, size_t n);
  /// Consumer: copies up to n bytes out of full slots, in order, freeing each slot once
  /// it is empty (a slot may be read in several calls); returns how many bytes came out
  /// (0: the ring is empty). Rings the peer's doorbell when it freed a slot.
  size_t try_read(void* data, size_t n);
  /// Producer: true when at least one slot is free.
  bool can_write() const;
  /// Consumer: true when at least one slot is full.
  bool can_read() const;

 private:
  char* slot(uint64_t index) const;

  ShmRingHeader& ring_;
  char* slots_;
  uint32_t slot_bytes_;
  uint32_t slot_count_;
  ShmDoorbell& peer_bell_;
  size_t read_offset_ = 0;  // consumer: bytes of the slot at tail already copied out
};

/// Wakes the side that sleeps on `bell`, if it sleeps (see MEMORY ORDERING above): call it
/// after publishing a counter.
void ring_doorbell(ShmDoorbell& bell);

/// Waits until ready() is true: re-checks it `spin` times, then sleeps on `mine` (this
/// side's doorbell) in slices of at most 100 ms, checking between slices that process
/// `peer_pid` is alive. Returns true once ready() holds, false when `deadline` passes
/// first (ready() is checked at least once). Throws PeerClosedError naming `peer` when
/// that process is gone and ready() still does not hold: ask ready() once more after the
/// death is seen, since a dead peer writes no more, and what it wrote before it died must
/// stay readable (a peer may finish its last send and exit before this side looks).
bool wait_doorbell(ShmDoorbell& mine, const std::function<bool()>& ready, int peer_pid,
                   const std::string& peer, std::chrono::steady_clock::time_point deadline,
                   int spin);

/// True while process `pid` runs (exists in /proc and is not a zombie).
bool process_alive(int pid);

/// Throws PeerClosedError: `peer` (process `pid`) is gone without closing its end of the
/// shared-memory channel. What wait_doorbell and ShmStream's liveness check throw.
[[noreturn]] void throw_peer_gone(const std::string& peer, int pid);

}  // namespace course
