// socket.h: TCP sockets with framed messages, the transport under everything else.
//
// Socket owns one connected TCP stream (RAII, move-only). send_all/recv_all move exactly
// n bytes, looping over partial reads and writes and EINTR; recv_all throws
// PeerClosedError when the peer closes mid-message and TimeoutError when the deadline
// passes. Frames are a 8-byte little-endian length followed by that many bytes.
// Listener owns a listening socket and vets new connections (listener.cpp). Every
// connected socket has TCP_NODELAY set.
//
// What this is not: an event loop. Each call blocks the calling thread (with a timeout).
//
// Thread safety: a Socket may be used by one sending thread and one receiving thread at
// the same time (TCP is full duplex); two threads must not send (or receive) at once.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace course {

using Millis = std::chrono::milliseconds;

/// How long a blocking socket call waits by default before throwing TimeoutError.
/// COURSE_TIMEOUT_S in the environment overrides it (seconds).
Millis default_timeout();

/// A connected TCP stream.
class Socket {
 public:
  Socket() = default;
  /// Takes ownership of a connected fd; sets TCP_NODELAY.
  explicit Socket(int fd, std::string peer_name = "");
  ~Socket();
  /// Takes other's connection; other is left invalid.
  Socket(Socket&& other) noexcept;
  /// Closes this connection, then takes other's; other is left invalid.
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  /// Connects to host:port, retrying refused connections until `timeout` has passed
  /// (the listener may not be up yet). Throws TimeoutError naming host:port.
  static Socket connect(const std::string& host, int port, Millis timeout = default_timeout());

  /// True while it owns a connection (not default-constructed, moved from or closed).
  bool valid() const { return fd_ >= 0; }
  /// The file descriptor, or -1.
  int fd() const { return fd_; }
  /// "127.0.0.1:51234", or the name given at construction (e.g. "rank 2").
  const std::string& peer_name() const { return peer_name_; }
  /// Renames the peer in error messages ("rank 2").
  void set_peer_name(std::string name) { peer_name_ = std::move(name); }

  /// Sends exactly n bytes. Throws PeerClosedError, TimeoutError or NetworkError.
  void send_all(const void* data, size_t n, Millis timeout = default_timeout());
  /// Receives exactly n bytes. Throws PeerClosedError, TimeoutError or NetworkError.
  void recv_all(void* data, size_t n, Millis timeout = default_timeout());

  /// Sends one frame: an 8-byte length, then the bytes.
  void send_frame(const void* data, size_t n, Millis timeout = default_timeout());
  /// Sends `bytes` as one frame.
  void send_frame(const std::string& bytes, Millis timeout = default_timeout()) {
    send_frame(bytes.data(), bytes.size(), timeout);
  }
  /// Receives one frame. Throws ProtocolError when its length exceeds max_bytes
  /// (garbage or a stranger), so a bad peer cannot make us allocate gigabytes.
  std::string recv_frame(Millis timeout = default_timeout(), size_t max_bytes = 64u << 20);

  /// True when the peer has closed its end (a zero-byte read would follow), without
  /// consuming data. Never blocks.
  bool peer_closed() const;

  /// Shuts down both directions (wakes a thread blocked in recv on this socket).
  void shutdown();
  /// Closes the connection now; the socket becomes invalid. The destructor does the same.
  void close();

 private:
  int fd_ = -1;
  std::string peer_name_;
};

/// A listening TCP socket that vets what connects to it (listener.cpp): accept() hands
/// out a connection only once it has sent its first bytes, so silent strangers cannot hold
/// up the connections behind them. Every course protocol's dialer speaks first (the hello
/// of handshake.h); accept_any() is for a protocol where the listening side speaks first.
class Listener {
 public:
  /// How long a new connection may stay silent before it is closed.
  static constexpr Millis kHelloDeadline{10'000};
  /// At most this many connections wait for their first bytes; the oldest is dropped.
  static constexpr size_t kMaxPending = 256;

  Listener() = default;
  /// Binds host:port (port 0: the kernel picks a free one) and listens. A port in use
  /// throws ConfigError naming the port and saying to pick another (or unset MASTER_PORT).
  Listener(const std::string& host, int port, int backlog = 128);
  ~Listener();
  /// Takes other's listening socket and waiting connections; other is left invalid.
  Listener(Listener&& other) noexcept;
  /// Closes this socket, then takes other's; other is left invalid.
  Listener& operator=(Listener&& other) noexcept;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  /// The port it listens on (the kernel's pick when constructed with port 0).
  int port() const { return port_; }
  /// The file descriptor, or -1.
  int fd() const { return fd_; }
  /// Waits up to `timeout` for a connection that has sent something, while vetting every
  /// other one that arrives meanwhile (see above). Throws TimeoutError. Returns an invalid
  /// Socket when the wake fd (set_wake_fd) became readable.
  Socket accept(Millis timeout = default_timeout());
  /// Waits up to `timeout` for one connection and returns it at once, silent or not.
  /// Throws TimeoutError.
  Socket accept_any(Millis timeout = default_timeout());
  /// A file descriptor that, once readable, makes accept() return an invalid Socket (a
  /// server's stop signal). -1: none.
  void set_wake_fd(int fd) { wake_fd_ = fd; }
  /// Stops listening (later connection attempts are refused) and drops waiting connections.
  void close();

 private:
  struct Pending {
    int fd;
    std::string name;
    std::chrono::steady_clock::time_point expires;
  };
  /// Moves every connection from the kernel's backlog into pending_. False on an error
  /// other than "none left" (errno says which).
  bool accept_backlog();

  int fd_ = -1;
  int port_ = 0;
  std::vector<Pending> pending_;
  int wake_fd_ = -1;
};

/// A free TCP port on host right now (bind to 0, read it, close). Another process may take
/// it before you bind it; the launcher uses it for MASTER_PORT.
int find_free_port(const std::string& host = "127.0.0.1");

/// A port kept for a server that another process binds later (the test harness's rank 0):
/// bound with SO_REUSEADDR but never listening, so the kernel gives it to nobody else, not
/// even as a client's ephemeral port, while a Listener (also SO_REUSEADDR) may still bind
/// and listen on it. Unlike find_free_port, no other process can take the port between the
/// choice and the bind. Released on destruction. host: an address of this machine.
class PortReservation {
 public:
  /// Binds a free port on host (SO_REUSEADDR, no listen) and holds it.
  explicit PortReservation(const std::string& host = "127.0.0.1");
  ~PortReservation();  ///< releases the port
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  int port() const { return port_; }  ///< the port held

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// Little-endian helpers for building small binary headers.
void put_u64(std::string& out, uint64_t v);
uint64_t get_u64(const char* p);
void put_u32(std::string& out, uint32_t v);
uint32_t get_u32(const char* p);

}  // namespace course
