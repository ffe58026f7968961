// shm_stream.h: a ByteStream (common/comm/byte_stream.h) between two ranks on one machine,
// made of the two channels of their shared segment (shm_channel.h).
//
//        side 0 (lower rank)                       side 1
//   out = ring[0]  ── try_write ──> slots ──> try_read ──  in = ring[0]
//   in  = ring[1]  <── try_read ─── slots <── try_write ── out = ring[1]
//         sleeps on bell[0]                               sleeps on bell[1]
//
// Both directions of one side sleep on that side's doorbell: every event a side waits for
// (data in, or a slot freed) comes from the peer, which rings that bell. So one futex
// serves DuplexLink's "wait until I can send or receive" on one stream.
//
// Closing: close() (and the destructor) marks this side closed and rings the peer, whose
// reads fail with PeerClosedError once the ring is drained and whose writes fail at once;
// shutdown() does the same but keeps the mapping (another thread may be inside a call);
// a crash is noticed through the pid (shm_channel.h, PEER DEATH), by wait_doorbell in a
// long wait and by the stream itself across many short ones.
//
// What this is not: the rendezvous; shm_transport.h creates the segment through the store.
//
// Thread safety: one sending and one receiving thread at a time; shutdown() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "byte_stream.h"
#include "shm_channel.h"
#include "shm_segment.h"

namespace course {

/// One rank's end of a shared-memory connection (see the top of this file).
class ShmStream final : public ByteStream {
 public:
  /// `segment` is mapped and initialised (ShmPairHeader); `side` is 0 for the lower rank.
  /// `spin` is how often a wait re-checks before sleeping (shm_channel.h, WAITING).
  ShmStream(ShmSegment segment, int side, std::string peer_name, int spin);
  /// Closes this end (the peer's calls then fail) and unmaps.
  ~ShmStream() override;
  ShmStream(const ShmStream&) = delete;
  ShmStream& operator=(const ShmStream&) = delete;

  void send_all(const void* data, size_t n, Millis timeout) override;
  void recv_all(void* data, size_t n, Millis timeout) override;
  size_t try_send(const void* data, size_t n) override;
  size_t try_recv(void* data, size_t n) override;
  bool wait(bool want_send, bool want_recv, Millis timeout) override;
  void shutdown() override;
  void close() override;
  const std::string& peer_name() const override { return peer_name_; }
  void set_peer_name(std::string name) override { peer_name_ = std::move(name); }
  const char* kind() const override { return "shm"; }

  /// The segment's pair header (tests look at the counters).
  ShmPairHeader& header() const { return *header_; }

 private:
  // Throws when this side was shut down, or (for `sending`, or a drained receive) when
  // the peer has closed its end.
  void check_open(bool sending, bool drained) const;
  bool wait_until(const std::function<bool()>& ready, Millis timeout);
  // Throws PeerClosedError when the peer's process is gone and ready() does not hold,
  // looking at most every kShmLivenessPeriod. ready() is asked after the death is seen:
  // what the peer wrote before it died stays readable, as TCP delivers what was sent
  // before a close.
  void check_peer_alive(const std::function<bool()>& ready);

  ShmSegment segment_;
  ShmPairHeader* header_;
  int side_;
  std::string peer_name_;
  int spin_;
  // When check_peer_alive last looked (steady_clock ticks): DuplexLink's wait_either
  // waits on two streams in slices of 1 ms, too short for wait_doorbell's own check.
  std::atomic<int64_t> last_alive_check_;
  std::unique_ptr<ShmChannel> out_;
  std::unique_ptr<ShmChannel> in_;
};

}  // namespace course
