// futex.h: sleeping on a word of shared memory until another process changes it.
//
// A futex ("fast user-space mutex") is Linux's way to sleep on an address: futex_wait
// puts the caller to sleep only if the word still holds `expected` (checked atomically by
// the kernel, so a change between our last look and the sleep is never missed), and
// futex_wake wakes whoever sleeps on the same word. Both sides may be different
// processes: the word lives in a shared-memory segment (not FUTEX_PRIVATE_FLAG).
// Nothing is a system call until somebody actually sleeps: the common case, where the
// data is already there, costs one load.
//
// What this is not: a lock. Lesson 12's doorbells (shm_channel.h) build their protocol on it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace course {

/// Sleeps while `word` holds `expected`, for at most `timeout`. Returns on a wake, on a
/// timeout, when the word already differs, or on a signal: the caller re-checks its
/// condition in every case. Throws SystemError on any other failure.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::microseconds timeout);

/// Wakes every thread of every process sleeping in futex_wait on `word`.
void futex_wake_all(std::atomic<uint32_t>& word);

}  // namespace course
