// listener.cpp: listening sockets that vet their connections (see socket.h).
//
// Why vetting: every course protocol opens with a hello from the dialing side
// (handshake.h), and the listening side used to take one connection at a time, reading its
// hello with a timeout. A stranger that connects and says nothing (a port scanner, a stuck
// client, fifty of them) then held up every rank behind it. accept() here keeps every new
// connection in a pending set, polls them all at once, and hands out the first one that
// has sent something; a connection silent for kHelloDeadline is closed (and logged), and
// at most kMaxPending wait at a time (the oldest goes first). Strangers cost one file
// descriptor each for a few seconds, never the accept loop.
//
//   backlog ──accept4──> pending (polled together) ──first bytes──> accept() returns it
//                                               └──silent 10 s───> closed, logged
#include <fcntl.h>
#include <netdb.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "activity.h"
#include "error.h"
#include "socket.h"
#include "socket_detail.h"

namespace course {

using detail::Clock;
using detail::Deadline;
using detail::format_address;
using detail::wait_ready;

Listener::Listener(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), std::to_string(port).c_str(),
                               &hints, &found);
  if (rc != 0) {
    throw ConfigError("cannot listen on '" + host + "': " + ::gai_strerror(rc) +
                      ". Give an address of this machine (or 0.0.0.0 for all of them)");
  }
  int err = 0;
  for (addrinfo* ai = found; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    // SO_REUSEADDR lets a restarted job bind a port whose old connections sit in TIME_WAIT.
    // (It does not let two listeners share a port; that would be SO_REUSEPORT.)
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      fd_ = fd;
    } else {
      err = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    if (err == EADDRINUSE) {
      throw ConfigError("port " + std::to_string(port) + " on " + host +
                        " is already in use: pick another port (or unset MASTER_PORT and "
                        "let the launcher choose a free one)");
    }
    if (err == EADDRNOTAVAIL) {
      throw ConfigError("cannot listen on " + host + ": it is not an address of this machine");
    }
    errno = err;
    throw_system_error("listening on " + host + ":" + std::to_string(port));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  COURSE_CHECK_SYS(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), "getsockname()");
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

Listener::~Listener() {
  close();
}

Listener::Listener(Listener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      port_(std::exchange(other.port_, 0)),
      pending_(std::move(other.pending_)),
      wake_fd_(std::exchange(other.wake_fd_, -1)) {
  other.pending_.clear();
}

Listener& Listener::operator=(Listener&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    port_ = std::exchange(other.port_, 0);
    pending_ = std::move(other.pending_);
    other.pending_.clear();
    wake_fd_ = std::exchange(other.wake_fd_, -1);
  }
  return *this;
}

bool Listener::accept_backlog() {
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    // The listening fd is non-blocking, so accept4 never waits. The new connection is a
    // blocking fd (no SOCK_NONBLOCK) closed on exec.
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd >= 0) {
      if (pending_.size() >= kMaxPending) {
        log_warning("dropped a connection from " + pending_.front().name + " on port " +
                    std::to_string(port_) + ": " + std::to_string(kMaxPending) +
                    " connections were already waiting to say hello (the cap)");
        ::close(pending_.front().fd);
        pending_.erase(pending_.begin());
      }
      pending_.push_back({fd, format_address(addr), Clock::now() + kHelloDeadline});
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    return false;  // out of file descriptors, say: the caller reports it
  }
}

Socket Listener::accept(Millis timeout) {
  const Deadline deadline(timeout);
  std::optional<ActivityScope> activity;  // set once the call has to wait
  while (true) {
    if (!accept_backlog() && pending_.empty()) {
      throw_system_error("accept() on port " + std::to_string(port_));
    }
    // Close the connections that stayed silent too long.
    const auto now = Clock::now();
    for (size_t i = 0; i < pending_.size();) {
      if (now < pending_[i].expires) {
        ++i;
        continue;
      }
      log_warning("dropped a connection from " + pending_[i].name + " on port " +
                  std::to_string(port_) + ": it sent nothing within " +
                  std::to_string(kHelloDeadline.count() / 1000) + " s (not a course process?)");
      ::close(pending_[i].fd);
      pending_.erase(pending_.begin() + static_cast<long>(i));
    }
    std::vector<pollfd> fds{{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    for (const Pending& p : pending_) fds.push_back({p.fd, POLLIN, 0});
    int wait_ms = deadline.poll_ms();
    for (const Pending& p : pending_) {
      const auto left = std::chrono::ceil<Millis>(p.expires - now).count();
      const int ms = static_cast<int>(std::clamp<long long>(left, 0, INT_MAX));
      if (wait_ms < 0 || ms < wait_ms) wait_ms = ms;
    }
    if (!activity && wait_ms != 0) activity.emplace("accept on port " + std::to_string(port_));
    const int rc = ::poll(fds.data(), fds.size(), wait_ms);
    if (rc < 0 && errno != EINTR) throw_system_error("poll() on port " + std::to_string(port_));
    if (rc > 0 && fds[1].revents != 0) return Socket();  // woken: see set_wake_fd
    for (size_t i = 2; rc > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      // It spoke (or hung up: the caller's hello read reports that). Hand it out.
      Pending ready = pending_[i - 2];
      pending_.erase(pending_.begin() + static_cast<long>(i - 2));
      return Socket(ready.fd, ready.name);
    }
    if (deadline.expired()) {
      throw TimeoutError("no connection arrived on port " + std::to_string(port_) + " within " +
                         deadline.describe() + ": did every rank start?");
    }
  }
}

Socket Listener::accept_any(Millis timeout) {
  const Deadline deadline(timeout);
  while (true) {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = ::accept4(fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd >= 0) return Socket(fd, format_address(addr));
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      ActivityScope activity("accept on port " + std::to_string(port_));
      if (wait_ready(fd_, POLLIN, deadline)) continue;
      throw TimeoutError("no connection arrived on port " + std::to_string(port_) + " within " +
                         deadline.describe() + ": did every rank start?");
    }
    throw_system_error("accept() on port " + std::to_string(port_));
  }
}

void Listener::close() {
  for (const Pending& p : pending_) ::close(p.fd);
  pending_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int find_free_port(const std::string& host) {
  return Listener(host, 0).port();
}

PortReservation::PortReservation(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found);
  if (rc != 0) throw ConfigError("cannot reserve a port on '" + host + "': " + ::gai_strerror(rc));
  int err = 0;
  for (addrinfo* ai = found; ai != nullptr && fd_ < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      fd_ = fd;
    } else {
      err = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    errno = err;
    throw_system_error("reserving a port on " + host);
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  COURSE_CHECK_SYS(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len),
                   "getsockname() of a port reservation");
  port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

PortReservation::~PortReservation() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace course
