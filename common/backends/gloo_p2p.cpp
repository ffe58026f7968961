// gloo_p2p.cpp: see gloo_p2p.h.
#include "gloo_p2p.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <future>

#include "error.h"
#include "gloo_check.h"
#include "work.h"

namespace course {

namespace {

constexpr uint64_t kHeaderSlotPrefix = 0x11;
constexpr uint64_t kPayloadSlotPrefix = 0x12;

uint64_t header_slot(int tag) {
  return (kHeaderSlotPrefix << 56) | static_cast<uint64_t>(tag);
}
uint64_t payload_slot(int tag, uint64_t count) {
  return (kPayloadSlotPrefix << 56) | (static_cast<uint64_t>(tag) << 32) |
         static_cast<uint32_t>(count);
}

// Shared, not unique: the waiter lambdas live in std::function, which must be copyable.
using Buffer = std::shared_ptr<gloo::transport::UnboundBuffer>;

}  // namespace

// One operation's waiter thread, and whether it has finished.
struct GlooP2p::Waiter {
  std::thread thread;
  std::atomic<bool> finished{false};
};

GlooP2p::GlooP2p(std::shared_ptr<gloo::Context> context, std::shared_ptr<GlooAbortState> abort,
                 Millis timeout, RankNames names)
    : context_(std::move(context)),
      abort_(std::move(abort)),
      timeout_(timeout),
      names_(std::move(names)) {}

GlooP2p::~GlooP2p() {
  bool pending = false;
  for (const auto& w : waiters_) pending = pending || !w->finished.load();
  if (pending) context_->closeConnections();  // pending Gloo waits fail now
  for (auto& w : waiters_) w->thread.join();
}

WorkPtr GlooP2p::launch(std::function<void()> wait_body, const std::string& what) {
  // Reap the waiters that are done, so a long run does not collect threads.
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if ((*it)->finished.load()) {
      (*it)->thread.join();
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  auto promise = std::make_shared<std::promise<void>>();
  auto work = std::make_shared<FutureWork>(promise->get_future().share(), what);
  auto waiter = std::make_unique<Waiter>();
  Waiter* w = waiter.get();
  // `finished` is set before the Work completes: once a caller has waited for every Work,
  // none counts as pending, and the destructor closes softly. (Set after, a destructor
  // racing the last waiter would hard-close, resetting connections that peers may still
  // be reading this rank's last bytes from.)
  waiter->thread = std::thread([body = std::move(wait_body), promise, w] {
    std::exception_ptr error;
    try {
      body();
    } catch (...) {
      error = std::current_exception();
    }
    w->finished.store(true);
    if (error) {
      promise->set_exception(error);
    } else {
      promise->set_value();
    }
  });
  waiters_.push_back(std::move(waiter));
  return work;
}

WorkPtr GlooP2p::isend(std::span<const float> data, int dst, int tag) {
  const std::string what = "isend of " + std::to_string(data.size()) + " elements to " +
                           names_(dst) + " (tag " + std::to_string(tag) + ")";
  auto count = std::make_shared<uint64_t>(data.size());
  Buffer header, payload;
  COURSE_CHECK_GLOO(
      {
        header = context_->createUnboundBuffer(count.get(), sizeof(uint64_t));
        header->send(dst, header_slot(tag));
        if (!data.empty()) {
          // Gloo only reads from a send buffer; its API is not const-qualified.
          payload =
              context_->createUnboundBuffer(const_cast<float*>(data.data()), data.size_bytes());
          payload->send(dst, payload_slot(tag, data.size()));
        }
      },
      what);
  return launch(
      [header = std::move(header), payload = std::move(payload), count, timeout = timeout_, what] {
        COURSE_CHECK_GLOO(
            {
              header->waitSend(timeout);
              if (payload) payload->waitSend(timeout);
            },
            what);
      },
      what);
}

WorkPtr GlooP2p::irecv(std::span<float> data, int src, int tag) {
  const std::string what = "irecv of " + std::to_string(data.size()) + " elements from " +
                           names_(src) + " (tag " + std::to_string(tag) + ")";
  auto count = std::make_shared<uint64_t>(0);
  Buffer header, payload;
  COURSE_CHECK_GLOO(
      {
        header = context_->createUnboundBuffer(count.get(), sizeof(uint64_t));
        header->recv(src, header_slot(tag));
        if (!data.empty()) {
          payload = context_->createUnboundBuffer(data.data(), data.size_bytes());
          payload->recv(src, payload_slot(tag, data.size()));
        }
      },
      what);
  return launch(
      [header = std::move(header), payload = std::move(payload), count, data, src, tag,
       context = context_, abort = abort_, timeout = timeout_, what,
       sender = names_(src)]() mutable {
        COURSE_CHECK_GLOO(header->waitRecv(timeout), what);
        if (*count == data.size()) {
          if (payload) COURSE_CHECK_GLOO(payload->waitRecv(timeout), what);
          return;
        }
        // The sender's count differs: drain its payload, abort the group, name both sizes.
        std::vector<float> drain(*count);
        if (!drain.empty()) {
          COURSE_CHECK_GLOO(
              {
                Buffer sink = context->createUnboundBuffer(drain.data(), drain.size() * 4);
                sink->recv(src, payload_slot(tag, drain.size()));
                sink->waitRecv(timeout);
              },
              what);
        }
        const std::string reason = what + ": " + sender + " sent " + std::to_string(*count) +
                                   " elements, this rank expected " + std::to_string(data.size()) +
                                   "; both sides of a send/recv pair must agree on the count";
        {
          std::lock_guard<std::mutex> lock(abort->mu);
          if (abort->reason.empty()) abort->reason = reason;
        }
        // Our receive of data.size() elements is still posted and Gloo cannot cancel it:
        // close the connections so nothing can land in `data` any more, and leak the
        // buffer object on purpose rather than free memory Gloo may still point to.
        context->closeConnections();
        if (payload) new Buffer(std::move(payload));
        throw ProtocolError(reason);
      },
      what);
}

}  // namespace course
