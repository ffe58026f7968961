// emulated_link.h: a cluster's network link, emulated on one machine by pacing the sender.
//
// On loopback two ranks of one machine move bytes as fast as their cores copy them, and
// that copying is the only cost: there is no wire to wait on. A real cluster is the other
// way round: a NIC moves the bytes (DMA) while the cores compute, and what a rank waits
// for is the wire. An emulated link gives the tcp transport that wire:
//
//   --link 10gbit,20us        (or COURSE_LINK=10gbit,20us in the environment)
//
// Every message then takes its wire time, latency + bytes / bandwidth, before its last
// byte leaves, and the sender sleeps for it (never spins), so its core stays free to
// compute, as with a NIC. Each connection's send direction is one wire with a "free at"
// clock: back-to-back messages queue behind each other as they would in a NIC's queue,
// and a message larger than kPaceChunk leaves chunk by chunk, each chunk when the wire has
// carried it (the receiver sees the bytes at the wire's pace).
//
// A third figure makes the link a traffic shaper's instead of a wire's, `1gbit,0us,512kb`:
// a token bucket of 512 KiB, as the kernel's tbf qdisc has (tools/shaped_link.sh). An idle
// wire then banks its idle time, up to the bucket's fill time, and spends it on the next
// messages: short gaps between messages cost nothing, which a wire's idle time never
// gives back. `make bench-link` uses it to compare the pacing with tbf on equal terms.
//
// Where it sits: SocketStream (byte_stream.h) paces its sends, so everything that rides
// on the course's tcp transport is paced: lesson 02's messages, the rings of lesson 05,
// the process groups of lessons 09-11. Shared memory (lesson 12) is not paced: it stands
// for the links inside one machine. Gloo and NCCL use their own transports, not paced.
//
// The link's figures and their parsing (LinkSpec, parse_link, COURSE_LINK) are
// runtime/link_spec.h; this file is the pacing.
#pragma once

#include <chrono>
#include <cstddef>

#include "link_spec.h"

namespace course {

/// The wire of one connection's send direction: when each chunk of bytes has crossed it.
/// Thread safety: one sending thread at a time (as the stream it belongs to).
class LinkPacer {
 public:
  /// The clock the wire's times are on.
  using Clock = std::chrono::steady_clock;
  /// Bytes handed to the socket per wire slot (a NIC's packets, coarsened: each chunk
  /// costs the sender one wake-up).
  static constexpr size_t kPaceChunk = 256 << 10;

  /// A wire with `spec`'s bandwidth and latency, free now.
  explicit LinkPacer(LinkSpec spec) : spec_(spec) {}

  /// The link's figures.
  const LinkSpec& spec() const { return spec_; }

  /// Reserves the wire for the next chunk of at most `bytes` bytes (kPaceChunk at most),
  /// starting when the wire is free or now, whichever is later (or up to the burst's fill
  /// time before now, with a burst); `new_message` adds the latency. A chunk that continues a
  /// message starts the moment the previous one was done, however late the sender comes back (the
  /// message sat in the NIC's queue), so a message takes its wire time whatever the sender's
  /// wake-ups. Returns the chunk's size; ready_at() says when it has crossed the wire and may be
  /// handed to the socket.
  size_t reserve(size_t bytes, bool new_message, Clock::time_point now);
  /// When the reserved chunk has crossed the wire.
  Clock::time_point ready_at() const { return free_at_; }
  /// Bytes reserved and not yet handed to the socket.
  size_t reserved() const { return reserved_; }
  /// Records that `bytes` of the reserved chunk were handed to the socket.
  void sent(size_t bytes) { reserved_ -= bytes < reserved_ ? bytes : reserved_; }

  /// Sleeps (with a fine timer slack, so the wake-up is on time) until `t`.
  static void sleep_until(Clock::time_point t);
  /// Sets this thread's timer slack to 1 ns (once), so timed sleeps and polls wake on time.
  static void use_fine_timer_slack();

 private:
  LinkSpec spec_;
  Clock::time_point free_at_{};
  size_t reserved_ = 0;
  bool chained_ = false;  // the last chunk had more bytes right behind it
};

}  // namespace course
