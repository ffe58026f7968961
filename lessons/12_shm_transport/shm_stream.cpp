// shm_stream.cpp: see shm_stream.h.
#include "shm_stream.h"

#include <chrono>

#include "error.h"
#include "futex.h"

namespace course {

ShmStream::ShmStream(ShmSegment segment, int side, std::string peer_name, int spin)
    : segment_(std::move(segment)),
      header_(static_cast<ShmPairHeader*>(segment_.data())),
      side_(side),
      peer_name_(std::move(peer_name)),
      spin_(spin),
      last_alive_check_(std::chrono::steady_clock::now().time_since_epoch().count()) {
  if (header_ == nullptr || header_->magic != kShmMagic || (side != 0 && side != 1)) {
    throw ProtocolError("shared-memory segment " + segment_.name() +
                        " is not an initialised pair of rings");
  }
  const size_t stride = shm_slot_stride(header_->slot_bytes);
  const size_t front = shm_pair_bytes(header_->slot_bytes, 0);
  char* base = static_cast<char*>(segment_.data()) + front;
  char* ring_slots[2] = {base, base + size_t{header_->slots} * stride};
  const int peer = 1 - side;
  out_ = std::make_unique<ShmChannel>(header_->ring[side], ring_slots[side], header_->slot_bytes,
                                      header_->slots, header_->bell[peer]);
  in_ = std::make_unique<ShmChannel>(header_->ring[peer], ring_slots[peer], header_->slot_bytes,
                                     header_->slots, header_->bell[peer]);
}

ShmStream::~ShmStream() {
  close();
}

void ShmStream::check_open(bool sending, bool drained) const {
  if (header_ == nullptr || header_->closed[side_].load(std::memory_order_acquire) != 0) {
    throw NetworkError("shared-memory connection to " + peer_name_ +
                       " was shut down on this side (the group was aborted or closed)");
  }
  if ((sending || drained) && header_->closed[1 - side_].load(std::memory_order_acquire) != 0) {
    throw PeerClosedError(peer_name_ + " closed its end of the shared-memory connection" +
                          std::string(sending ? " while this rank was sending" : "") +
                          "; that rank probably exited or hit an error, see its output");
  }
}

size_t ShmStream::try_send(const void* data, size_t n) {
  check_open(true, false);
  return n == 0 ? 0 : out_->try_write(data, n);
}

size_t ShmStream::try_recv(void* data, size_t n) {
  check_open(false, false);
  if (n == 0) return 0;
  const size_t k = in_->try_read(data, n);
  if (k == 0) check_open(false, true);  // nothing left and the peer gone: fail now
  return k;
}

void ShmStream::check_peer_alive(const std::function<bool()>& ready) {
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  const int64_t period =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(kShmLivenessPeriod).count();
  int64_t last = last_alive_check_.load(std::memory_order_relaxed);
  if (now - last < period ||
      !last_alive_check_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return;
  }
  const int pid = header_->pid[1 - side_];
  // A dead peer writes no more, so ready() asked after the death is seen is final.
  if (!process_alive(pid) && !ready()) throw_peer_gone(peer_name_, pid);
}

bool ShmStream::wait_until(const std::function<bool()>& ready, Millis timeout) {
  check_peer_alive(ready);
  const int peer = 1 - side_;
  const auto closed = [this, peer] {
    return header_->closed[0].load(std::memory_order_acquire) != 0 ||
           header_->closed[1].load(std::memory_order_acquire) != 0;
  };
  return wait_doorbell(
      header_->bell[side_], [&] { return ready() || closed(); }, header_->pid[peer], peer_name_,
      std::chrono::steady_clock::now() + timeout, spin_);
}

bool ShmStream::wait(bool want_send, bool want_recv, Millis timeout) {
  check_open(false, false);
  return wait_until(
      [&] { return (want_send && out_->can_write()) || (want_recv && in_->can_read()); }, timeout);
}

void ShmStream::send_all(const void* data, size_t n, Millis timeout) {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    const size_t k = try_send(p + done, n - done);
    done += k;
    if (done == n) break;
    if (k == 0 && !wait_until([this] { return out_->can_write(); }, timeout)) {
      throw TimeoutError("send to " + peer_name_ + " over shared memory: no slot freed for " +
                         std::to_string(timeout.count()) + " ms with " + std::to_string(n - done) +
                         " of " + std::to_string(n) +
                         " bytes still to send; is that rank receiving?");
    }
  }
}

void ShmStream::recv_all(void* data, size_t n, Millis timeout) {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < n) {
    const size_t k = try_recv(p + done, n - done);
    done += k;
    if (done == n) break;
    if (k == 0 && !wait_until([this] { return in_->can_read(); }, timeout)) {
      throw TimeoutError("recv from " + peer_name_ + " over shared memory: nothing arrived for " +
                         std::to_string(timeout.count()) + " ms with " + std::to_string(n - done) +
                         " of " + std::to_string(n) +
                         " bytes still to come; is that rank sending?");
    }
  }
}

void ShmStream::shutdown() {
  if (header_ == nullptr) return;
  header_->closed[side_].store(1, std::memory_order_release);
  // Wake both sides: our own threads blocked in a wait, and the peer's.
  for (ShmDoorbell& bell : header_->bell) {
    bell.seq.fetch_add(1, std::memory_order_release);
    futex_wake_all(bell.seq);
  }
}

void ShmStream::close() {
  if (header_ == nullptr) return;
  shutdown();
  out_.reset();
  in_.reset();
  header_ = nullptr;
  segment_ = ShmSegment();
}

}  // namespace course
