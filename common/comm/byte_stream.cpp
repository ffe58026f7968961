// byte_stream.cpp: SocketStream's non-blocking calls and wait_either (see byte_stream.h).
#include "byte_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "error.h"

namespace course {

namespace {

std::atomic<uint64_t> g_bytes_sent{0};  // tcp_bytes_sent()

// The most one send() may take. The kernel would take up to the whole socket buffer (a
// few MiB on loopback), but on loopback a send also runs the receiving side's TCP work
// for those bytes on our CPU; smaller sends let our own receive direction in between, so
// both directions advance together instead of in bursts.
constexpr size_t kMaxSendBytes = 256 << 10;

[[noreturn]] void throw_io(int err, const std::string& what) {
  if (err == EPIPE || err == ECONNRESET) {
    throw PeerClosedError(what + ": the connection was closed (" + std::strerror(err) +
                          "); that rank probably exited or crashed, see its output");
  }
  throw NetworkError(what + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
}

int poll_ms(Millis timeout) {
  return static_cast<int>(std::max<Millis::rep>(0, timeout.count()));
}

using Clock = std::chrono::steady_clock;

// poll() until `deadline`, to the nanosecond (an emulated wire's chunks are shorter than
// poll()'s millisecond). Returns poll's count of ready descriptors, 0 at the deadline.
int poll_until(pollfd* fds, nfds_t n, Clock::time_point deadline, const std::string& what) {
  LinkPacer::use_fine_timer_slack();
  for (;;) {
    const auto left = std::max(Clock::duration::zero(), deadline - Clock::now());
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    const int rc = ::ppoll(fds, n, &ts, nullptr);
    if (rc >= 0) return rc;
    if (errno != EINTR) throw_system_error("poll() on " + what);
  }
}

// Waits to receive on `in` (when want_recv) until the emulated wire of the sending stream
// is free at `ready` or `timeout` passes; true when either direction could move.
bool wait_for_wire(int in_fd, bool want_recv, Clock::time_point ready, Millis timeout,
                   const std::string& what) {
  const Clock::time_point wake = std::min(ready, Clock::now() + timeout);
  if (!want_recv || in_fd < 0) {
    LinkPacer::sleep_until(wake);
  } else {
    pollfd fd{in_fd, POLLIN, 0};
    if (poll_until(&fd, 1, wake, what) > 0) return true;
  }
  return Clock::now() >= ready;
}

}  // namespace

uint64_t tcp_bytes_sent() {
  return g_bytes_sent.load(std::memory_order_relaxed);
}

void SocketStream::send_all(const void* data, size_t n, Millis timeout) {
  g_bytes_sent.fetch_add(n, std::memory_order_relaxed);
  if (!pacer_.spec().emulated()) {
    socket_.send_all(data, n, timeout);
    return;
  }
  // One message: chunk by chunk, each handed to the socket once the wire has carried it.
  const char* p = static_cast<const char*>(data);
  bool first = true;
  while (n > 0) {
    const size_t chunk = pacer_.reserve(n, first, Clock::now());
    first = false;
    LinkPacer::sleep_until(pacer_.ready_at());
    socket_.send_all(p, chunk, timeout);
    pacer_.sent(chunk);
    p += chunk;
    n -= chunk;
  }
}

Clock::time_point SocketStream::send_ready_at() const {
  return pacer_.reserved() > 0 ? pacer_.ready_at() : Clock::time_point{};
}

size_t SocketStream::try_send(const void* data, size_t n) {
  if (!pacer_.spec().emulated() || n == 0) return raw_try_send(data, n);
  const Clock::time_point now = Clock::now();
  if (pacer_.reserved() == 0) {
    pacer_.reserve(n, message_start_, now);
    message_start_ = false;
  }
  if (now < pacer_.ready_at()) return 0;  // the wire still carries the reserved chunk
  const size_t k = raw_try_send(data, std::min(n, pacer_.reserved()));
  pacer_.sent(k);
  return k;
}

size_t SocketStream::raw_try_send(const void* data, size_t n) {
  for (;;) {
    const ssize_t k =
        ::send(socket_.fd(), data, std::min(n, kMaxSendBytes), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k >= 0) {
      g_bytes_sent.fetch_add(static_cast<uint64_t>(k), std::memory_order_relaxed);
      return static_cast<size_t>(k);
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno != EINTR) throw_io(errno, "send to " + peer_name());
  }
}

size_t SocketStream::try_recv(void* data, size_t n) {
  if (n == 0) return 0;
  for (;;) {
    const ssize_t k = ::recv(socket_.fd(), data, n, MSG_DONTWAIT);
    if (k == 0) {
      throw PeerClosedError("recv from " + peer_name() +
                            ": the peer closed the connection; that rank probably exited or "
                            "crashed, see its output");
    }
    if (k > 0) return static_cast<size_t>(k);
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    if (errno != EINTR) throw_io(errno, "recv from " + peer_name());
  }
}

bool SocketStream::wait(bool want_send, bool want_recv, Millis timeout) {
  const Clock::time_point ready = send_ready_at();
  if (want_send && ready > Clock::now()) {
    return wait_for_wire(socket_.fd(), want_recv, ready, timeout,
                         "the connection to " + peer_name());
  }
  pollfd fd{socket_.fd(), static_cast<short>((want_send ? POLLOUT : 0) | (want_recv ? POLLIN : 0)),
            0};
  for (;;) {
    const int rc = ::poll(&fd, 1, poll_ms(timeout));
    if (rc >= 0) return rc > 0;  // errors and hang-ups surface in the next call
    if (errno != EINTR) throw_system_error("poll() on the connection to " + peer_name());
  }
}

bool wait_either(ByteStream& out, bool want_send, ByteStream& in, bool want_recv, Millis timeout) {
  if (&out == &in) return out.wait(want_send, want_recv, timeout);
  if (!want_send) return in.wait(false, want_recv, timeout);
  if (!want_recv) return out.wait(want_send, false, timeout);
  if (out.poll_fd() >= 0 && in.poll_fd() >= 0) {
    const Clock::time_point ready = out.send_ready_at();
    if (ready > Clock::now()) {
      return wait_for_wire(in.poll_fd(), true, ready, timeout, "two connections");
    }
    pollfd fds[2] = {{out.poll_fd(), POLLOUT, 0}, {in.poll_fd(), POLLIN, 0}};
    for (;;) {
      const int rc = ::poll(fds, 2, poll_ms(timeout));
      if (rc >= 0) return rc > 0;
      if (errno != EINTR) throw_system_error("poll() on two connections");
    }
  }
  // Different carriers: no single system call waits on both, so take turns in short
  // slices; the receive side gets the sleep (in a ring it is the one that wakes us).
  constexpr Millis kSlice{1};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (out.wait(true, false, Millis(0))) return true;
    if (in.wait(false, true, kSlice)) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

}  // namespace course
