// byte_stream.h: a connection to one peer that moves bytes in order, whatever carries them.
//
// Lessons 02-05 were written against TCP sockets; lesson 12 adds a second carrier for
// ranks on one machine (a ring of slots in shared memory). Both sit behind ByteStream, so
// TcpComm keeps one stream per peer and every algorithm above it (messages, DuplexLink,
// the ring, the collectives) runs unchanged on either:
//
//   ByteStream          send_all / recv_all (blocking, with a timeout), try_send /
//      |                try_recv (never block: move what can move now), wait (until a
//      |                direction could move), shutdown / close, peer_name
//      +-- SocketStream   a TCP Socket (socket.h); poll_fd() is its fd
//      +-- ShmStream      two shared-memory channels (lesson 12)
//
// wait_either() waits on two streams at once (DuplexLink's one_thread mode sends to one
// peer and receives from another): two sockets wait together in one poll(); otherwise the
// waits alternate in short slices.
//
// Errors: PeerClosedError when the peer is gone (closed, crashed), TimeoutError when a
// blocking call's deadline passes, NetworkError otherwise; each names the peer.
//
// Emulated link (emulated_link.h): a SocketStream made with a LinkSpec paces its sends as
// a NIC on that link would (the sender sleeps for the wire time); try_send then returns 0
// while the wire is busy, wait() and wait_either() sleep until it is free.
//
// Thread safety: as Socket: one sending and one receiving thread at a time; shutdown()
// from any thread (it wakes both).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "emulated_link.h"
#include "socket.h"

namespace course {

/// An ordered, reliable byte connection to one peer (see the top of this file).
class ByteStream {
 public:
  virtual ~ByteStream() = default;

  /// Sends exactly n bytes. Throws PeerClosedError, TimeoutError or NetworkError.
  virtual void send_all(const void* data, size_t n, Millis timeout) = 0;
  /// Receives exactly n bytes. Throws PeerClosedError, TimeoutError or NetworkError.
  virtual void recv_all(void* data, size_t n, Millis timeout) = 0;
  /// Sends what can leave now without blocking (at most n bytes); returns how many left.
  virtual size_t try_send(const void* data, size_t n) = 0;
  /// Receives what has arrived (at most n bytes) without blocking; returns how many.
  /// Throws PeerClosedError once the peer is gone and nothing is left to read.
  virtual size_t try_recv(void* data, size_t n) = 0;
  /// Blocks until try_send (want_send) or try_recv (want_recv) could move a byte or would
  /// fail, for at most `timeout`. False when the timeout passed first.
  virtual bool wait(bool want_send, bool want_recv, Millis timeout) = 0;
  /// A file descriptor poll() can wait on for both directions, or -1 (not a socket).
  virtual int poll_fd() const { return -1; }

  /// Wakes any thread blocked on this stream with an error; later calls fail. Never blocks.
  virtual void shutdown() = 0;
  /// Releases the connection now. The destructor does the same.
  virtual void close() = 0;
  /// "rank 2" (or an address), for error messages.
  virtual const std::string& peer_name() const = 0;
  /// Renames the peer in error messages.
  virtual void set_peer_name(std::string name) = 0;
  /// What carries the bytes: "tcp" or "shm".
  virtual const char* kind() const = 0;

  /// The bytes of the next try_send start a new message (an emulated link charges its
  /// latency once per message). Streams without an emulated link ignore it.
  virtual void note_message_start() {}
  /// The earliest time try_send could move a byte as far as an emulated link is concerned
  /// (the socket's own buffer aside); the clock's epoch when the wire is free or there is
  /// no emulated link.
  virtual std::chrono::steady_clock::time_point send_ready_at() const { return {}; }
};

/// Owning handle of a stream.
using ByteStreamPtr = std::unique_ptr<ByteStream>;

/// A ByteStream over a connected TCP Socket (socket.h), which it owns.
class SocketStream final : public ByteStream {
 public:
  /// Takes the connection; `link` emulated: sends are paced (emulated_link.h).
  explicit SocketStream(Socket socket, LinkSpec link = {})
      : socket_(std::move(socket)), pacer_(link) {}

  void send_all(const void* data, size_t n, Millis timeout) override;
  void recv_all(void* data, size_t n, Millis timeout) override {
    socket_.recv_all(data, n, timeout);
  }
  size_t try_send(const void* data, size_t n) override;
  size_t try_recv(void* data, size_t n) override;
  bool wait(bool want_send, bool want_recv, Millis timeout) override;
  int poll_fd() const override { return socket_.fd(); }
  void shutdown() override { socket_.shutdown(); }
  void close() override { socket_.close(); }
  const std::string& peer_name() const override { return socket_.peer_name(); }
  void set_peer_name(std::string name) override { socket_.set_peer_name(std::move(name)); }
  const char* kind() const override { return "tcp"; }
  void note_message_start() override { message_start_ = true; }
  std::chrono::steady_clock::time_point send_ready_at() const override;

  /// The socket underneath.
  Socket& socket() { return socket_; }
  /// The emulated link this stream's sends are paced on (not emulated: not paced).
  const LinkSpec& link() const { return pacer_.spec(); }

 private:
  size_t raw_try_send(const void* data, size_t n);

  Socket socket_;
  LinkPacer pacer_;
  bool message_start_ = true;
};

/// Bytes this process has handed to tcp sockets through SocketStream since it started
/// (every peer, every thread; payload and framing, not TCP's own headers). Benchmarks read
/// it before and after a step: what crossed the (emulated) wire. Shared memory, Gloo and
/// NCCL move their bytes elsewhere and are not counted.
uint64_t tcp_bytes_sent();

/// Waits until `out` could send (want_send) or `in` could receive (want_recv), for at
/// most `timeout`; false when it passed first. `out` and `in` may be the same stream.
bool wait_either(ByteStream& out, bool want_send, ByteStream& in, bool want_recv, Millis timeout);

}  // namespace course
