// byte_stream.cpp: SocketStream's non-blocking calls and wait_either (see byte_stream.h).
#include "byte_stream.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "error.h"

namespace course {

namespace {

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

}  // namespace

size_t SocketStream::try_send(const void* data, size_t n) {
  for (;;) {
    const ssize_t k =
        ::send(socket_.fd(), data, std::min(n, kMaxSendBytes), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k >= 0) return static_cast<size_t>(k);
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
