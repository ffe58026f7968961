// emulated_link.cpp: see emulated_link.h.
#include "emulated_link.h"

#include <sys/prctl.h>

#include <algorithm>
#include <thread>

namespace course {

size_t LinkPacer::reserve(size_t bytes, bool new_message, Clock::time_point now) {
  const size_t chunk = std::min(bytes, kPaceChunk);
  // The rest of a message was handed over with its first chunk, as to a NIC's queue: its
  // chunks follow each other on the wire however late the sender wakes up to hand them on
  // (a late sender then hands the chunks that are due at once, and the message still
  // takes its wire time in all). A new message starts when the wire is free, or now.
  //
  // With a burst (a shaper's token bucket, link_spec.h), the wire's clock may lag `now` by
  // up to the time the bucket takes to fill: the idle time before a new message is paid
  // back up to that much, so after an idle spell a message of up to `burst` bytes is due
  // at once, and a stream of messages still averages the bandwidth.
  const auto refund = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
      static_cast<double>(spec_.burst_bytes) * 8.0 / spec_.bits_per_second));
  const Clock::time_point start = chained_ ? free_at_ : std::max(now - refund, free_at_);
  const double seconds = (new_message ? spec_.latency_s : 0.0) +
                         static_cast<double>(chunk) * 8.0 / spec_.bits_per_second;
  free_at_ =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  reserved_ = chunk;
  chained_ = chunk < bytes;
  return chunk;
}

void LinkPacer::use_fine_timer_slack() {
  // The default timer slack (50 us) would make every wake-up late by up to that much: at
  // 10 Gbit/s a quarter of a chunk's wire time. One nanosecond: wake up when asked.
  thread_local bool fine_slack = false;
  if (!fine_slack) {
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    fine_slack = true;
  }
}

void LinkPacer::sleep_until(Clock::time_point t) {
  use_fine_timer_slack();
  std::this_thread::sleep_until(t);
}

}  // namespace course
