// socket.cpp: TCP streams, listeners and frames over POSIX sockets (see socket.h).
//
// How a blocking call with a timeout is built here: the first send/recv of a call is
// non-blocking, so a small message costs one system call; if it cannot finish, the socket's
// own timeout (SO_SNDTIMEO / SO_RCVTIMEO) is set to what is left of the call's deadline and
// the rest moves in blocking calls. No call ever blocks past its deadline, and a large
// transfer wakes the thread as rarely as the kernel allows (see send_iov below).
//
// What this is not: a general networking library. IPv4 and IPv6 TCP only; no TLS.
#include "socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "activity.h"
#include "error.h"
#include "socket_detail.h"

namespace course {
namespace {

using detail::Clock;
using detail::Deadline;
using detail::wait_ready;
/// The network error for errno `err` while talking to `peer`.
[[noreturn]] void throw_io_error(int err, const std::string& op, const std::string& peer) {
  if (err == EPIPE || err == ECONNRESET) {
    throw PeerClosedError("connection to " + peer + " was reset during " + op +
                          ": the peer exited or crashed (look for its own error above)");
  }
  throw NetworkError(op + " with " + peer + " failed: " + std::strerror(err) + " (errno " +
                     std::to_string(err) + ")");
}

/// Sets SO_RCVTIMEO or SO_SNDTIMEO to what is left of the deadline (0: wait forever), so
/// the next blocking call on fd cannot outlive the deadline.
void arm_timeout(int fd, int option, const Deadline& deadline) {
  const int ms = deadline.poll_ms();
  timeval tv{};
  if (ms > 0) tv = timeval{ms / 1000, (ms % 1000) * 1000};
  COURSE_CHECK_SYS(::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv)),
                   "setsockopt(socket timeout)");
}

std::string send_timeout_message(const Deadline& deadline, size_t total, size_t sent,
                                 const std::string& peer) {
  return "timed out after " + deadline.describe() + " sending " + std::to_string(total) +
         " bytes to " + peer + " (" + std::to_string(sent) +
         " sent): the peer is not reading. It may be stuck or dead; if it is only slow, raise "
         "COURSE_TIMEOUT_S";
}

std::string recv_timeout_message(const Deadline& deadline, size_t n, size_t got,
                                 const std::string& peer) {
  return "timed out after " + deadline.describe() + " waiting for " + std::to_string(n) +
         " bytes from " + peer + " (" + std::to_string(got) +
         " arrived): the peer may be stuck, dead or waiting on us. If it is only slow, raise "
         "COURSE_TIMEOUT_S";
}

// send_iov and recv_exact share one pattern. The first call is non-blocking
// (MSG_DONTWAIT): a small message, or bytes already waiting, cost one system call. When it
// answers EAGAIN, we arm the socket's own timeout with what is left of the deadline and
// switch to blocking calls (MSG_WAITALL on receive), so that the kernel moves the rest of a
// large message in as few wake-ups as it can; a blocking call that answers EAGAIN has hit
// that timeout. (Polling after every partial read instead costs about a third of loopback
// bandwidth.) If EAGAIN comes early (a non-blocking fd), poll() waits instead.

/// Sends every byte described by iov[0..count). The iovec array is consumed (modified).
/// One sendmsg() may carry a frame's header and its payload together.
void send_iov(int fd, iovec* iov, int count, const Deadline& deadline, const std::string& peer) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) total += iov[i].iov_len;
  size_t sent = 0;
  bool blocking = false;
  std::optional<ActivityScope> activity;                    // set once the call has to wait
  while (count > 0 && iov[0].iov_len == 0) ++iov, --count;  // skip empty pieces
  while (count > 0) {
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    // MSG_NOSIGNAL: a closed peer gives EPIPE here instead of killing us with SIGPIPE.
    const ssize_t k = ::sendmsg(fd, &msg, MSG_NOSIGNAL | (blocking ? 0 : MSG_DONTWAIT));
    if (k >= 0) {
      sent += static_cast<size_t>(k);
      size_t left = static_cast<size_t>(k);
      while (count > 0 && left >= iov[0].iov_len) left -= iov[0].iov_len, ++iov, --count;
      if (count > 0) {
        iov[0].iov_base = static_cast<char*>(iov[0].iov_base) + left;
        iov[0].iov_len -= left;
      }
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (deadline.expired() || (blocking && !wait_ready(fd, POLLOUT, deadline))) {
        throw TimeoutError(send_timeout_message(deadline, total, sent, peer));
      }
      arm_timeout(fd, SO_SNDTIMEO, deadline);
      if (!blocking && activity_recorded()) activity.emplace("send to " + peer);
      blocking = true;
      continue;
    }
    throw_io_error(errno, "send of " + std::to_string(total) + " bytes", peer);
  }
}

/// Receives exactly n bytes into data.
void recv_exact(int fd, char* data, size_t n, const Deadline& deadline, const std::string& peer) {
  size_t got = 0;
  bool blocking = false;
  std::optional<ActivityScope> activity;  // set once the call has to wait
  while (got < n) {
    const ssize_t k = ::recv(fd, data + got, n - got, blocking ? MSG_WAITALL : MSG_DONTWAIT);
    if (k > 0) {
      got += static_cast<size_t>(k);
      continue;
    }
    if (k == 0) {
      throw PeerClosedError("connection closed by " + peer + " after " + std::to_string(got) +
                            " of " + std::to_string(n) +
                            " bytes: the peer exited or crashed (look for its own error above)");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (deadline.expired() || (blocking && !wait_ready(fd, POLLIN, deadline))) {
        throw TimeoutError(recv_timeout_message(deadline, n, got, peer));
      }
      arm_timeout(fd, SO_RCVTIMEO, deadline);
      if (!blocking && activity_recorded()) activity.emplace("recv from " + peer);
      blocking = true;
      continue;
    }
    throw_io_error(errno, "receive of " + std::to_string(n) + " bytes", peer);
  }
}

void set_nonblocking(int fd, bool on) {
  const int flags = COURSE_CHECK_SYS(::fcntl(fd, F_GETFL), "fcntl(F_GETFL)");
  COURSE_CHECK_SYS(::fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK),
                   "fcntl(F_SETFL)");
}

/// A loopback connect() to a port nobody listens on can, rarely, connect the socket to
/// itself (TCP "simultaneous open" when the kernel picks the same port as source). Such a
/// socket talks to itself, so we treat it as refused and retry.
bool connected_to_itself(int fd) {
  sockaddr_storage mine{}, theirs{};
  socklen_t a = sizeof(mine), b = sizeof(theirs);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &a) != 0) return false;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &b) != 0) return false;
  return a == b && std::memcmp(&mine, &theirs, a) == 0;
}

/// One connect() attempt to one address, bounded by the deadline. Returns the connected fd,
/// or -1 with `error` set to why it failed.
int try_connect(const addrinfo& ai, const Deadline& deadline, std::string& error) {
  const int fd = ::socket(ai.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw_system_error("socket()");
  int err = 0;
  if (::connect(fd, ai.ai_addr, ai.ai_addrlen) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      if (!wait_ready(fd, POLLOUT, deadline)) {
        err = ETIMEDOUT;
      } else {
        socklen_t len = sizeof(err);
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
  }
  if (err == 0 && connected_to_itself(fd)) err = ECONNREFUSED;
  if (err != 0) {
    error = std::strerror(err);
    ::close(fd);
    return -1;
  }
  set_nonblocking(fd, false);  // our calls use MSG_DONTWAIT; the fd itself stays blocking
  return fd;
}

}  // namespace

Millis default_timeout() {
  static const Millis timeout = [] {
    const char* text = std::getenv("COURSE_TIMEOUT_S");
    if (text == nullptr || *text == '\0') return Millis(120'000);
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(seconds > 0) || !std::isfinite(seconds)) {
      throw ConfigError("COURSE_TIMEOUT_S='" + std::string(text) +
                        "' is not a positive number of seconds: export COURSE_TIMEOUT_S=120");
    }
    return Millis(static_cast<long long>(std::min(seconds * 1000.0, 1e12)));
  }();
  return timeout;
}

// ---------------------------------------------------------------------------------------
// Socket

Socket::Socket(int fd, std::string peer_name) : fd_(fd), peer_name_(std::move(peer_name)) {
  // Small messages (a hello, a store request, a 4-byte tag) must leave at once, not wait
  // up to 40 ms for Nagle's algorithm to batch them. Fails harmlessly on non-TCP sockets.
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (peer_name_.empty()) peer_name_ = detail::peer_address(fd_);
}

Socket::~Socket() {
  close();
}

Socket::Socket(Socket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), peer_name_(std::move(other.peer_name_)) {}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    peer_name_ = std::move(other.peer_name_);
  }
  return *this;
}

Socket Socket::connect(const std::string& host, int port, Millis timeout) {
  const Deadline deadline(timeout);
  const std::string where = host + ":" + std::to_string(port);
  std::string last_error = "no address tried";
  int backoff_ms = 10;
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc == 0) {
      for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
        const int fd = try_connect(*ai, deadline, last_error);
        if (fd >= 0) {
          ::freeaddrinfo(found);
          return Socket(fd, where);
        }
      }
      ::freeaddrinfo(found);
    } else if (rc == EAI_AGAIN) {
      last_error = ::gai_strerror(rc);  // DNS hiccup: retry like a refused connection
    } else {
      throw NetworkError("cannot resolve host '" + host + "': " + ::gai_strerror(rc) +
                         ". Check MASTER_ADDR: a host name or IP address every rank can reach");
    }
    // Refused (nobody listens yet) or unreachable: the listener may still be starting.
    if (deadline.expired()) {
      throw TimeoutError("could not connect to " + where + " within " + deadline.describe() +
                         " (last error: " + last_error + "). Is rank 0 running, and do " +
                         "MASTER_ADDR and MASTER_PORT name it?");
    }
    const int left = deadline.poll_ms();
    std::this_thread::sleep_for(Millis(left < 0 ? backoff_ms : std::min(backoff_ms, left)));
    backoff_ms = std::min(backoff_ms * 2, 200);
  }
}

void Socket::send_all(const void* data, size_t n, Millis timeout) {
  iovec iov{const_cast<void*>(data), n};
  send_iov(fd_, &iov, 1, Deadline(timeout), peer_name_);
}

void Socket::recv_all(void* data, size_t n, Millis timeout) {
  recv_exact(fd_, static_cast<char*>(data), n, Deadline(timeout), peer_name_);
}

// A frame on the wire:  | u64 length (little-endian) | length bytes |
// Header and payload leave in one sendmsg() so a small frame is one TCP segment.
void Socket::send_frame(const void* data, size_t n, Millis timeout) {
  std::string header;
  put_u64(header, n);
  iovec iov[2] = {{header.data(), header.size()}, {const_cast<void*>(data), n}};
  send_iov(fd_, iov, 2, Deadline(timeout), peer_name_);
}

std::string Socket::recv_frame(Millis timeout, size_t max_bytes) {
  const Deadline deadline(timeout);
  char header[8];
  recv_exact(fd_, header, sizeof(header), deadline, peer_name_);
  const uint64_t n = get_u64(header);
  if (n > max_bytes) {
    throw ProtocolError(peer_name_ + " announced a frame of " + std::to_string(n) +
                        " bytes, more than the " + std::to_string(max_bytes) +
                        " allowed here: it is not speaking this protocol (a stranger, or " +
                        "garbage on the wire)");
  }
  // Grow with what arrives, not with what was announced: a peer that announces 64 MiB and
  // then sends nothing (or trickles) costs what it sent, never the announced size.
  std::string bytes;
  while (bytes.size() < n) {
    const size_t have = bytes.size();
    const size_t piece = std::min<size_t>(n - have, std::max<size_t>(have, 1u << 20));
    bytes.resize(have + piece);
    recv_exact(fd_, bytes.data() + have, piece, deadline, peer_name_);
  }
  return bytes;
}

bool Socket::peer_closed() const {
  if (fd_ < 0) return true;
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLRDHUP | POLLERR)) return true;
  char byte;
  return ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);  // never retried on EINTR: on Linux the fd is gone either way
  fd_ = -1;
}

// ---------------------------------------------------------------------------------------
// Small helpers

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace course
