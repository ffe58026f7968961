// shm_tuning.cpp: see shm_tuning.h.
#include "shm_tuning.h"

#include <sched.h>

#include <cstdlib>
#include <string>

#include "error.h"

namespace course {

namespace {

long env_number(const char* name, long fallback, long lo, long hi) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return fallback;
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (*end != '\0' || v < lo || v > hi) {
    throw ConfigError(std::string(name) + "=" + value + ": expected a whole number in [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return v;
}

}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

ShmTuning choose_shm_tuning(int local_ranks, int cores) {
  ShmTuning t;
  if (local_ranks > cores) {
    t.spin = 0;
    t.ring_chunk_elements = 256 * 1024;                    // 1 MiB chunks: fewer wake-ups
    t.ring_sender_thread_bytes = static_cast<size_t>(-1);  // never: one thread per rank
  }
  t.spin = static_cast<int>(env_number("COURSE_SHM_SPIN", t.spin, 0, 100'000'000));
  t.slot_bytes = static_cast<uint32_t>(
      env_number("COURSE_SHM_SLOT_KIB", t.slot_bytes >> 10, 1, 64 * 1024) << 10);
  t.slots = static_cast<uint32_t>(env_number("COURSE_SHM_SLOTS", t.slots, 2, 4096));
  t.ring_chunk_elements =
      static_cast<size_t>(env_number("COURSE_RING_CHUNK_KIB",
                                     static_cast<long>(t.ring_chunk_elements / 256), 1, 1 << 20) *
                          256);
  // -1: never a sender thread; 0: always.
  const long sender = env_number("COURSE_RING_SENDER_MIB",
                                 t.ring_sender_thread_bytes == static_cast<size_t>(-1)
                                     ? -1
                                     : static_cast<long>(t.ring_sender_thread_bytes >> 20),
                                 -1, 1 << 20);
  t.ring_sender_thread_bytes =
      sender < 0 ? static_cast<size_t>(-1) : static_cast<size_t>(sender) << 20;
  return t;
}

}  // namespace course
