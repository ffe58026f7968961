// process_group_gloo_impl.h: the state of a GlooProcessGroup, shared by its two source
// files: process_group_gloo.cpp (construction, point to point, all-reduce) and
// process_group_gloo_collectives.cpp (the other collectives).
//
// What this is not: public. Only those two files include it.
#pragma once

#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>

#include <memory>
#include <mutex>
#include <string>

#include "error.h"
#include "gloo_check.h"
#include "gloo_p2p.h"
#include "process_group_gloo.h"
#include "serial_executor.h"

namespace course {

/// Gloo's reduction for `op` (AVG: gloo::sum; the caller divides afterwards).
inline void (*gloo_reduce_function(ReduceOp op))(void*, const void*, const void*, size_t) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      return &gloo::sum<float>;
    case ReduceOp::PRODUCT:
      return &gloo::product<float>;
    case ReduceOp::MIN:
      return &gloo::min<float>;
    case ReduceOp::MAX:
      return &gloo::max<float>;
  }
  throw ConfigError("unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

/// "count 1000", for the operation names in errors.
inline std::string gloo_count_str(size_t n) {
  return "count " + std::to_string(n);
}

struct GlooProcessGroup::Impl {
  int rank = 0;
  int world = 1;
  GlooOptions options;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::shared_ptr<GlooAbortState> abort = std::make_shared<GlooAbortState>();
  std::unique_ptr<GlooP2p> p2p;
  uint32_t next_tag = 1;  // the tag of the next collective; the same on every rank

  // Runs all_reduce_async calls one at a time, in issue order, on its own thread.
  std::unique_ptr<SerialExecutor> async_worker =
      std::make_unique<SerialExecutor>("gloo all_reduce_async");

  // Throws when an earlier error aborted the group (gloo_p2p.h).
  void check_not_aborted() const {
    std::lock_guard<std::mutex> lock(abort->mu);
    if (!abort->reason.empty()) {
      throw NetworkError(
          "this gloo group was aborted after an earlier error, and every call "
          "on it now fails; make a new group. The first error was: " +
          abort->reason);
    }
  }

  // A peer (allow_self false) or a root (true) must be a rank of this group.
  void check_rank(int peer, const char* what, bool allow_self = false) const {
    if (peer < 0 || peer >= world || (peer == rank && !allow_self)) {
      throw ConfigError(std::string("gloo: ") + what + " " + std::to_string(peer) +
                        " is not a valid peer in a world of " + std::to_string(world) +
                        " (this is rank " + std::to_string(rank) + ")");
    }
  }

  void check_tag(int tag, const char* op) const {
    if (tag < 0 || tag > GlooP2p::kMaxTag) {
      throw ConfigError(std::string("gloo ") + op + ": tag " + std::to_string(tag) +
                        " is outside [0, " + std::to_string(GlooP2p::kMaxTag) + "]");
    }
  }

  // The all-reduce of all_reduce, all_reduce_async and reduce_scatter, under `tag`.
  void run_all_reduce(float* data, size_t n, ReduceOp op, uint32_t tag);

  // Counts collective `op` with the monitor (GlooOptions::monitor); 0 without one.
  uint64_t enter(const char* op) const { return options.monitor ? options.monitor->enter(op) : 0; }
  // Collective `seq` has finished (GlooOptions::monitor).
  void left(uint64_t seq) const {
    if (options.monitor) options.monitor->leave(seq);
  }
  // REQUIRES: called from a catch block. Rethrows the error of collective `seq`, with the
  // monitor's diagnosis when there is a monitor (collective_monitor.h).
  [[noreturn]] void failed(uint64_t seq, const char* op) const {
    if (options.monitor) options.monitor->rethrow_with_report(seq, op);
    throw;
  }
};

/// COURSE_CHECK_GLOO for collective `seq` (from Impl::enter) named `op`: a failure also
/// goes through the group's monitor.
#define COURSE_GLOO_COLLECTIVE(im, seq, op, stmt, what) \
  do {                                                  \
    try {                                               \
      COURSE_CHECK_GLOO(stmt, what);                    \
      (im).left(seq);                                   \
    } catch (...) {                                     \
      (im).failed(seq, op);                             \
    }                                                   \
  } while (0)

}  // namespace course
