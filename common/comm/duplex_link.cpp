// duplex_link.cpp: see duplex_link.h.
//
// one_thread: every send and recv is one non-blocking call of the stream (try_send,
// try_recv); only when neither direction can move a byte do we wait (wait_either), on the
// directions still needed, for at most the link's timeout.
// sender_thread: a queue under a mutex; the send channel's worker pops spans and sends
// each with ByteStream::send_all, the caller receives with ByteStream::recv_all.
#include "duplex_link.h"

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>

#include "activity.h"
#include "error.h"
#include "tcp_comm.h"
#include "work.h"

namespace course {

// The queue between the calling thread and the send channel's worker (sender_thread).
struct DuplexLink::Sender {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Span> queue;
  Span sending{nullptr, 0};  // the span the worker is sending now
  size_t pending = 0;        // bytes queued or being sent
  bool closed = false;       // no more spans will come: the worker returns once drained
  bool failed = false;       // the worker's send threw (its Work holds the error)

  void push(const char* data, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu);
      queue.push_back({data, bytes});
      pending += bytes;
    }
    changed.notify_all();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu);
      closed = true;
    }
    changed.notify_all();
  }
  // The worker's operation: send every span, in order, until closed and drained.
  void run(ByteStream& out, Millis timeout) {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      changed.wait(lock, [&] { return closed || !queue.empty(); });
      if (queue.empty()) return;
      const Span span = queue.front();
      queue.pop_front();
      sending = span;
      lock.unlock();
      try {
        out.send_all(span.data, span.bytes, timeout);
      } catch (...) {
        lock.lock();
        failed = true;
        changed.notify_all();
        throw;
      }
      lock.lock();
      sending = {nullptr, 0};
      pending -= span.bytes;
      changed.notify_all();
    }
  }
  // True when a span queued or being sent shares a byte with [data, data + bytes).
  // REQUIRES: mu held.
  bool sends_from(const char* data, size_t bytes) const {
    const auto overlaps = [&](const Span& s) {
      return s.bytes > 0 && s.data < data + bytes && data < s.data + s.bytes;
    };
    if (overlaps(sending)) return true;
    for (const Span& s : queue) {
      if (overlaps(s)) return true;
    }
    return false;
  }
};

DuplexLink::DuplexLink(ByteStream& out, ByteStream& in, Millis timeout, std::string what,
                       std::shared_ptr<Sender> sender)
    : out_(out), in_(in), timeout_(timeout), what_(std::move(what)), sender_(std::move(sender)) {}

size_t DuplexLink::queued_bytes() const {
  size_t bytes = 0;
  for (const Span& span : queue_) bytes += span.bytes;
  return bytes;
}

// Only flush() waits to send without receiving. When the peer's buffers are full
// and nothing moves for the whole timeout, the peer is almost always doing the same: it
// sends to its right neighbour before it receives from us, and every rank of the ring
// waits for a receive that nobody posts.
std::string DuplexLink::send_deadlock_message(size_t queued) const {
  return what_ + ": deadlock: blocked in send to " + out_.peer_name() + " for " +
         std::to_string(timeout_.count()) + " ms with " + std::to_string(queued) +
         " bytes still queued and no receive posted. That rank is most likely blocked the "
         "same way, sending before it receives, so nobody reads: post_send, then recv while "
         "the sends drain, and flush only at the end (more than the socket buffers, a few "
         "MiB over TCP, cannot be sent before the peer receives)";
}

std::string DuplexLink::describe(const char* direction) const {
  const ByteStream& s = std::strcmp(direction, "to") == 0 ? out_ : in_;
  return what_ + " (" + direction + " " + s.peer_name() + ")";
}

void DuplexLink::post_send(const void* data, size_t bytes) {
  if (bytes == 0) return;
  if (sender_) {
    sender_->push(static_cast<const char*>(data), bytes);
    return;
  }
  queue_.push_back({static_cast<const char*>(data), bytes});
  try_send();
}

bool DuplexLink::try_send() {
  bool moved = false;
  while (!queue_.empty()) {
    Span& head = queue_.front();
    if (head.fresh) {
      out_.note_message_start();  // an emulated link charges its latency per message
      head.fresh = false;
    }
    size_t k = 0;
    try {
      k = out_.try_send(head.data, head.bytes);
    } catch (const PeerClosedError& e) {
      throw PeerClosedError(what_ + ": " + e.what());
    } catch (const NetworkError& e) {
      throw NetworkError(what_ + ": " + e.what());
    }
    if (k == 0) return moved;  // the stream takes no more right now
    moved = true;
    head.data += k;
    head.bytes -= k;
    if (head.bytes == 0) queue_.pop_front();
  }
  return moved;
}

bool DuplexLink::try_recv(char* data, size_t& done, size_t bytes) {
  bool moved = false;
  while (done < bytes) {
    size_t k = 0;
    try {
      k = in_.try_recv(data + done, bytes - done);
    } catch (const PeerClosedError& e) {
      throw PeerClosedError(what_ + ": " + e.what() + " (" + std::to_string(bytes - done) + " of " +
                            std::to_string(bytes) + " bytes were still to come)");
    } catch (const NetworkError& e) {
      throw NetworkError(what_ + ": " + e.what());
    }
    if (k == 0) return moved;
    moved = true;
    done += k;
  }
  return moved;
}

void DuplexLink::wait_ready(bool want_in) {
  const bool want_out = !queue_.empty();
  if (wait_either(out_, want_out, in_, want_in, timeout_)) return;
  if (!want_in) throw TimeoutError(send_deadlock_message(queued_bytes()));
  throw TimeoutError(what_ + ": no byte moved for " + std::to_string(timeout_.count()) +
                     " ms (waiting to receive from " + in_.peer_name() +
                     (want_out ? " and send to " + out_.peer_name() : "") +
                     "); is every rank in the same collective with the same count? If it "
                     "is only slow, raise COURSE_TIMEOUT_S");
}

void DuplexLink::recv(void* data, size_t bytes) {
  if (sender_) {
    // A buffer still being sent is not received into until its send is done: the bytes
    // sent are the ones posted (the ring receives the final value of a segment into the
    // memory it sent a partial one from), and the sender thread's last read of them
    // happens before this thread's first write (the mutex orders them).
    {
      std::unique_lock<std::mutex> lock(sender_->mu);
      const char* p = static_cast<const char*>(data);
      if (!sender_->changed.wait_for(
              lock, timeout_, [&] { return sender_->failed || !sender_->sends_from(p, bytes); })) {
        throw TimeoutError(what_ + ": waited " + std::to_string(timeout_.count()) +
                           " ms to receive into a buffer that is still being sent to " +
                           out_.peer_name() + "; " + send_deadlock_message(sender_->pending));
      }
    }
    in_.recv_all(data, bytes, timeout_);
    return;
  }
  char* p = static_cast<char*>(data);
  size_t done = 0;
  // Receive first: the bytes are most likely already waiting; then keep our side moving.
  try_recv(p, done, bytes);
  if (done == bytes) {
    try_send();
    return;
  }
  std::optional<ActivityScope> activity;  // its text only when recorded (activity.h)
  if (activity_recorded()) activity.emplace("recv " + describe("from"));
  for (;;) {
    const bool sent = try_send();
    const bool got = try_recv(p, done, bytes);
    if (done == bytes) return;
    if (!sent && !got) wait_ready(true);
  }
}

void DuplexLink::flush() {
  if (sender_) {
    std::unique_lock<std::mutex> lock(sender_->mu);
    if (!sender_->changed.wait_for(lock, timeout_,
                                   [&] { return sender_->pending == 0 || sender_->failed; })) {
      throw TimeoutError(send_deadlock_message(sender_->pending));
    }
    // A failed sender leaves its error in its Work; run_duplex reports that one.
    return;
  }
  if (queue_.empty()) return;
  std::optional<ActivityScope> activity;
  if (activity_recorded()) activity.emplace("send " + describe("to"));
  while (!queue_.empty()) {
    if (!try_send()) wait_ready(false);
  }
}

void run_duplex(TcpComm& comm, int to, int from, const std::string& what, DuplexMode mode,
                const std::function<void(DuplexLink&)>& body) {
  // The body's error is carried out of the channels by hand and thrown once, after
  // aborting the comm ourselves (tcp_comm.h's failure policy): thrown through two nested
  // channels it would reach the caller as the second channel's "aborted" error instead.
  std::exception_ptr error;
  if (mode == DuplexMode::one_thread) {
    comm.send_channel(to).run_inline([&] {
      comm.recv_channel(from).run_inline([&] {
        try {
          DuplexLink link(comm.stream(to), comm.stream(from), comm.timeout(), what);
          body(link);
          link.flush();
        } catch (...) {
          error = std::current_exception();
        }
      });
    });
  } else {
    // The sends run as one operation on the send channel's worker, after whatever that
    // channel was doing; the receives run here, holding the receive channel.
    auto sender = std::make_shared<DuplexLink::Sender>();
    ByteStream& out = comm.stream(to);
    const Millis timeout = comm.timeout();
    WorkPtr sends =
        comm.send_channel(to).submit([sender, &out, timeout] { sender->run(out, timeout); },
                                     what + " (sends to " + comm.names()(to) + ")");
    comm.recv_channel(from).run_inline([&] {
      try {
        DuplexLink link(out, comm.stream(from), timeout, what, sender);
        body(link);
        link.flush();
      } catch (...) {
        error = std::current_exception();
      }
    });
    // Whose error comes first: if the comm was already aborted when the body failed, the
    // sender failed first (its channel aborts the comm) and its error is the cause.
    const bool sender_failed_first = error && comm.aborted();
    // Abort before waiting: a worker blocked in send_all then fails at once.
    if (error && !sender_failed_first) comm.abort(exception_message(error));
    sender->close();
    try {
      sends->wait(timeout);
    } catch (...) {
      if (!error || sender_failed_first) error = std::current_exception();
    }
  }
  if (error) {
    comm.abort(exception_message(error));
    std::rethrow_exception(error);
  }
}

}  // namespace course
