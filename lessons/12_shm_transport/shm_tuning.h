// shm_tuning.h: how lesson 12 sets up its rings and the all-reduce ring for the machine:
// slot geometry, how long a waiter spins, and the ring's duplex mode and chunk size.
//
// The one question that matters on a small machine is whether the ranks outnumber the
// cores (LOCAL_WORLD_SIZE against the CPUs this process may run on):
//
//   ranks <= cores   a waiter spins a little before sleeping (the peer runs on another
//                    core and answers within microseconds); large buffers send on the
//                    send channel's thread (DuplexMode::sender_thread), so copying in and
//                    copying out use two cores.
//   ranks >  cores   spinning steals the core from the very rank we wait for, and a
//                    second thread per rank adds a context switch per chunk: no spin, one
//                    thread (DuplexMode::one_thread), and larger chunks (fewer wake-ups).
//
// The numbers came from ./lesson12 --bench on the course's 2-core machine (README).
//
// What this is not: a search. It picks from two measured settings.
#pragma once

#include <cstddef>
#include <cstdint>

namespace course {

/// The settings lesson 12 runs with (see the top of this file).
struct ShmTuning {
  uint32_t slot_bytes = 256u << 10;            ///< payload bytes per slot
  uint32_t slots = 8;                          ///< slots per ring (one direction)
  int spin = 2000;                             ///< re-checks before a waiter sleeps
  size_t ring_chunk_elements = 64 * 1024;      ///< all_reduce_ring's chunk (float32 elements)
  size_t ring_sender_thread_bytes = 8u << 20;  ///< from this size up, a sender thread
};

/// The CPUs this process may run on (its affinity mask), at least 1.
int available_cores();

/// The tuning for `local_ranks` ranks on this machine with `cores` CPUs.
/// COURSE_SHM_SPIN, COURSE_SHM_SLOT_KIB and COURSE_SHM_SLOTS override the channel's
/// settings, COURSE_RING_CHUNK_KIB and COURSE_RING_SENDER_MIB (-1: never) the ring's, for
/// measuring (README). A value out of range throws ConfigError naming the variable.
ShmTuning choose_shm_tuning(int local_ranks, int cores);

}  // namespace course
