// duplex_link.h: send to one peer and receive from another at the same time.
//
// A ring step is "send a chunk to the right, receive a chunk from the left". Done one
// after the other with blocking calls, the two directions take turns and the link runs
// at half speed (or deadlocks, once both sides' messages outgrow the socket buffers).
// DuplexLink keeps both directions busy: post_send() queues a span and returns at once,
// recv() blocks until a span from the other side has arrived, and the queued bytes keep
// leaving meanwhile.
//
//      post_send(span) ──> queue ──> [out stream] ──> right neighbour
//      recv(buffer)    <──────────── [in stream]  <── left neighbour   (out and in may be
//                                                                        the same stream)
//
// The streams are byte_stream.h's: TCP sockets, or lesson 12's shared-memory channels.
//
//   run_duplex(comm, right, left, "all_reduce_ring", DuplexMode::one_thread,
//              [&](DuplexLink& link) {
//     link.post_send(chunk.data(), chunk.size_bytes());  // queued, maybe partly sent
//     link.recv(tmp.data(), tmp.size_bytes());           // blocks; sends keep going
//   });                                                  // flushed when body returns
//
// Who moves the queued bytes (DuplexMode):
//   one_thread     the calling thread, inside every recv() and flush(): each send and
//                  recv is one non-blocking call (try_send/try_recv), and wait_either()
//                  sleeps only when neither direction can move. No thread hand-off: the fastest for
//                  small transfers, whose cost is wake-ups, not bytes.
//   sender_thread  the send channel's worker thread (tcp_comm.h) sends while the calling
//                  thread receives and computes. Two threads per rank can use two cores
//                  when the other rank's process is idle; for large transfers on a machine
//                  with as many cores as ranks that is worth the hand-off (lesson 05's
//                  benchmark measures both sides of that trade).
//
// Why no deadlock: in both modes queued bytes leave while this rank waits in recv(), so
// its neighbour's recv() is always fed, and vice versa, whatever the message sizes.
//
// What this is not: a message protocol. Bytes are raw (no header, no tag): both sides must
// agree on what flows, as in any ring where every rank runs the same schedule. A ring
// starts with one header each way (lesson 05 sends lesson 02's MessageHeader) to catch
// ranks that disagree on the count before any payload moves.
//
// Contracts:
//  - A posted buffer must stay alive and unchanged until flush() returns (run_duplex
//    flushes when its body returns). One exception: recv() into a buffer that is still
//    being sent waits for that send first (sender_thread mode), so the ring may receive a
//    segment's final value into the memory it sent the partial one from.
//  - The streams are used by nobody else while run_duplex runs (it holds their channels).
//  - Errors: PeerClosedError when a peer closes, TimeoutError when nothing moves for the
//    comm's timeout (from flush(): "<what>: deadlock: blocked in send to rank R ...", the
//    sign of ranks that all send a buffer larger than the socket buffers before any of
//    them receives), NetworkError otherwise, each naming the peer and `what`. run_duplex
//    aborts the comm on any error (tcp_comm.h's failure policy) and rethrows the first.
//
// Thread safety: one thread uses a link (the sender thread is the link's own business).
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "byte_stream.h"

namespace course {

class TcpComm;

/// Who sends the queued bytes (see above).
enum class DuplexMode { one_thread, sender_thread };

/// Sends to one peer while receiving from another (see the top of this file); made by
/// run_duplex, which flushes it when the body returns.
class DuplexLink {
 public:
  struct Sender;  // the queue shared with the sender thread (sender_thread mode)

  /// `out` carries what we send, `in` what we receive (they may be the same stream).
  /// `what` names the operation in errors. `sender` null: one_thread mode.
  DuplexLink(ByteStream& out, ByteStream& in, Millis timeout, std::string what,
             std::shared_ptr<Sender> sender = nullptr);
  DuplexLink(const DuplexLink&) = delete;
  DuplexLink& operator=(const DuplexLink&) = delete;

  /// Queues `bytes` bytes at `data` for sending after everything queued before, and (one
  /// thread) sends as much as the stream takes right now without blocking.
  void post_send(const void* data, size_t bytes);

  /// Receives exactly `bytes` bytes into `data`; queued bytes keep leaving meanwhile.
  void recv(void* data, size_t bytes);

  /// Blocks until every queued byte has been handed to the stream.
  void flush();

 private:
  struct Span {
    const char* data;
    size_t bytes;
    bool fresh = true;  // no byte sent yet: its first send starts a message
  };
  // one_thread: one non-blocking attempt in each direction; true if any byte moved.
  bool try_send();
  bool try_recv(char* data, size_t& done, size_t bytes);
  // one_thread: waits until a direction we still need can move (throws after timeout_).
  void wait_ready(bool want_in);
  std::string describe(const char* direction) const;
  // one_thread: the bytes posted but not yet handed to the stream.
  size_t queued_bytes() const;
  // flush() timed out: the "deadlock: blocked in send" error, naming what_ and the peer.
  std::string send_deadlock_message(size_t queued) const;

  ByteStream& out_;
  ByteStream& in_;
  Millis timeout_;
  std::string what_;
  std::shared_ptr<Sender> sender_;
  std::deque<Span> queue_;  // one_thread mode's queue
};

/// Runs `body` with a DuplexLink that sends to `to` and receives from `from`, holding
/// comm's receive channel of `from` for the whole body and, in one_thread mode, the send
/// channel of `to` too; in sender_thread mode the sends run as one operation on the send
/// channel of `to`. Either way no other operation touches those streams meanwhile. The
/// link is flushed when body returns. Any error aborts the comm and is rethrown.
void run_duplex(TcpComm& comm, int to, int from, const std::string& what, DuplexMode mode,
                const std::function<void(DuplexLink&)>& body);

}  // namespace course
