// gloo_p2p.h: send and receive between two ranks over Gloo, for the gloo backend.
//
// ON THE WIRE every message is two Gloo messages (unbound buffers), on two slots in
// prefixes no Gloo collective uses (gloo/types.h takes 0x01..0x08):
//
//   header    slot (0x11 << 56) | tag                   8 bytes: the element count
//   payload   slot (0x12 << 56) | tag << 32 | count     count x float32 (absent if 0)
//
// Why the count is in the payload's slot: Gloo matches a send with a posted receive by
// slot, in order; it accepts a message shorter than the receive without a word, and
// aborts the whole process on a longer one. With the count in the slot, a receive is
// posted at once (the bytes move in the background, before anyone waits) and can only
// match a message of exactly its size. The header tells a receiver whose count differs
// what was sent: it drains that payload, aborts the group and throws a ProtocolError
// naming both sizes and both ranks.
//
// WAITING. A Gloo wait that times out closes the connection ("Application timeout caused
// pair closure"), so a Work's wait(timeout) must never pass a short timeout to Gloo.
// Instead each operation gets a waiter thread that waits in Gloo with the group's full
// timeout and completes a FutureWork (work.h); Work::wait(timeout) waits on that, and may
// time out and be called again, as process_group.h promises.
//
// What this is not: public. GlooProcessGroup (process_group_gloo.h) is the interface.
//
// Thread safety: isend/irecv from the group's one calling thread; the Works from any.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "process_group.h"
#include "rank_names.h"

namespace gloo {
class Context;
}

namespace course {

/// The first error that made a gloo group unusable, shared by the group and its Works.
struct GlooAbortState {
  std::mutex mu;       ///< guards reason
  std::string reason;  ///< empty while the group is usable
};

/// The gloo backend's point-to-point messages (see the top of this file).
class GlooP2p {
 public:
  /// `timeout` bounds every Gloo wait; `abort` is the group's; `names` names the peers in
  /// errors (rank_names.h).
  GlooP2p(std::shared_ptr<gloo::Context> context, std::shared_ptr<GlooAbortState> abort,
          Millis timeout, RankNames names = {});
  /// Operations still pending (their Works never waited for) are cut short by closing
  /// the connections hard (Gloo resets them), then their waiter threads are joined: never
  /// blocks for long. With nothing pending the connections are left to the context's soft
  /// close, so peers still reading this rank's last messages get them.
  ~GlooP2p();
  GlooP2p(const GlooP2p&) = delete;
  GlooP2p& operator=(const GlooP2p&) = delete;

  /// REQUIRES: 0 <= tag < 2^24 (the tag shares the payload slot with the count).
  WorkPtr isend(std::span<const float> data, int dst, int tag);
  /// Receives the message rank `src` sent with `tag` into `data`. REQUIRES: as isend.
  WorkPtr irecv(std::span<float> data, int src, int tag);

  /// The largest tag isend and irecv accept.
  static constexpr int kMaxTag = (1 << 24) - 1;

 private:
  struct Waiter;
  WorkPtr launch(std::function<void()> wait_body, const std::string& what);

  std::shared_ptr<gloo::Context> context_;
  std::shared_ptr<GlooAbortState> abort_;
  Millis timeout_;
  RankNames names_;
  std::vector<std::unique_ptr<Waiter>> waiters_;
};

}  // namespace course
