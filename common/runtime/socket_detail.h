// socket_detail.h: what socket.cpp and listener.cpp share: deadlines, poll, addresses.
//
// Internal to the socket layer (socket.h is the interface); nothing else includes it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <string>

#include "error.h"
#include "socket.h"

namespace course::detail {

using Clock = std::chrono::steady_clock;

/// Timeouts at least this long mean "wait forever" (and keep the clock arithmetic from
/// overflowing when a caller passes Millis::max()).
constexpr Millis kForever{1LL << 40};

/// "120 s", "1.5 s" or "250 ms": a timeout as a person reads it.
inline std::string describe(Millis t) {
  if (t >= kForever) return "forever";
  if (t.count() < 1000) return std::to_string(t.count()) + " ms";
  if (t.count() % 1000 == 0) return std::to_string(t.count() / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", t.count() / 1000.0);
  return buf;
}

/// The point in time by which one call must be done.
class Deadline {
 public:
  explicit Deadline(Millis timeout) : timeout_(std::max(timeout, Millis(0))) {
    if (timeout_ < kForever) at_ = Clock::now() + timeout_;
  }
  bool forever() const { return timeout_ >= kForever; }
  /// What to give poll(): -1 to wait forever, 0 when the deadline has passed.
  int poll_ms() const {
    if (forever()) return -1;
    const auto left = std::chrono::ceil<Millis>(at_ - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
  }
  bool expired() const { return !forever() && Clock::now() >= at_; }
  std::string describe() const { return detail::describe(timeout_); }

 private:
  Millis timeout_;
  Clock::time_point at_{};
};

/// Waits until fd is ready for `events` (POLLIN or POLLOUT). False when the deadline passed.
/// Error and hang-up conditions count as ready: the next send/recv reports them.
inline bool wait_ready(int fd, short events, const Deadline& deadline) {
  while (true) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, deadline.poll_ms());
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw_system_error("poll() on a socket");
  }
}

/// "10.0.0.7:41234" for an IPv4 or IPv6 socket address.
inline std::string format_address(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  if (addr.ss_family == AF_UNIX) return "a unix socket";
  return "an unknown address";
}

inline std::string peer_address(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "an unknown peer";
  return format_address(addr);
}

}  // namespace course::detail
