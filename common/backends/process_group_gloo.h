// process_group_gloo.h: the `gloo` backend, the process-group interface over the real Gloo.
//
// GlooProcessGroup implements every call of process_group.h with Facebook's Gloo library
// (Debian libgloo-dev), the CPU engine behind torch.distributed's "gloo" backend: the TCP
// transport, one connection per pair of ranks, rendezvous through the course's own store
// (under a key prefix, so a gloo group and the course's tcp mesh share one store).
//
// How each call maps onto Gloo:
//   send/recv/isend/irecv  unbound buffers, slot = (0x10 << 56) | tag
//   broadcast              gloo::broadcast (binomial tree)
//   scatter, gather        gloo::scatter, gloo::gather (flat, from/to the root)
//   barrier                gloo::barrier
//   reduce                 gloo::reduce (ring reduce-scatter, then gather to the root)
//   all_reduce             gloo::allreduce, algorithm RING (or Gloo's default choice)
//   all_gather             gloo::allgather (ring)
//   reduce_scatter         gloo::allreduce on a scratch copy, then this rank's slice (the
//                          options API of Gloo has no reduce-scatter)
//   all_to_all             gloo::alltoall
//   all_reduce_async       the same all_reduce, run in issue order on one worker thread
//                          (a SerialExecutor, serial_executor.h)
// Reductions use gloo::sum/product/min/max (gloo/math.h), as torch does; AVG is SUM, then
// a scaling by 1/size() (reduce_kernels.h) on every rank.
//
// What this is not: a re-implementation of anything. The course's own algorithms are in
// lessons 02-05 (the `tcp` backend); this is the yardstick they are measured against.
//
// Errors: Gloo throws its own exceptions; every call translates them into the course's
// hierarchy (TimeoutError, NetworkError, ProtocolError, ConfigError) naming this rank, the
// operation and its size. A peer that closed its end: Gloo writes to its sockets with
// writev(), which cannot ask for MSG_NOSIGNAL, so the first GlooProcessGroup of a process
// sets SIGPIPE to ignored (as the Python interpreter does for every torch program): the
// write then fails with EPIPE, which Gloo reports and this backend names, instead of the
// kernel killing the rank. Run it: ./lesson05 --backend gloo, or the suites of lessons
// 02-05 (tests/collectives/), which run against both backends.
//
// Thread safety: as ProcessGroup: one thread issues calls. Each call gets its own Gloo tag
// from a per-group sequence number, so an all_reduce_async running on the worker thread
// never mixes bytes with a call issued meanwhile by the caller's thread.
#pragma once

#include <memory>
#include <string>

#include "collective_monitor.h"
#include "process_group.h"
#include "rank_names.h"
#include "store.h"

namespace course {

/// How a GlooProcessGroup connects and which all-reduce it runs.
struct GlooOptions {
  /// The address this rank binds and advertises to the others ("127.0.0.1" on one
  /// machine; this host's name or IP across machines).
  std::string host = "127.0.0.1";
  /// Store key prefix for the rendezvous; two groups in one job need two prefixes.
  std::string prefix = "gloo";
  /// Timeout of the rendezvous and of every operation.
  Millis timeout = default_timeout();
  /// all_reduce algorithm: "ring" (gloo::allreduce's ring, what torch picks on CPU) or
  /// "bcube".
  std::string allreduce_algorithm = "ring";
  /// When set, a failed collective names the ranks that had not reached it
  /// (collective_monitor.h; make_process_group sets one).
  std::shared_ptr<CollectiveMonitor> monitor;
  /// How errors name the ranks: a subgroup's names them by world rank (rank_names.h).
  RankNames names;
};

/// The `gloo` backend: every ProcessGroup call on the real Gloo library (see above).
class GlooProcessGroup : public ProcessGroup {
 public:
  /// Connects to every other rank through Gloo's TCP transport, rendezvousing through
  /// `store` (used only inside the constructor). Every rank of the group must construct
  /// its GlooProcessGroup with the same world and prefix.
  /// Throws TimeoutError when a rank does not show up within options.timeout.
  GlooProcessGroup(StoreClient& store, int rank, int world, GlooOptions options = {});
  ~GlooProcessGroup() override;
  GlooProcessGroup(const GlooProcessGroup&) = delete;
  GlooProcessGroup& operator=(const GlooProcessGroup&) = delete;

  int rank() const override;
  int size() const override;
  std::string backend() const override { return "gloo"; }

  void send(std::span<const float> data, int dst, int tag = 0) override;
  void recv(std::span<float> data, int src, int tag = 0) override;
  WorkPtr isend(std::span<const float> data, int dst, int tag = 0) override;
  WorkPtr irecv(std::span<float> data, int src, int tag = 0) override;

  void broadcast(std::span<float> data, int root) override;
  void scatter(std::span<const float> input, std::span<float> output, int root) override;
  void gather(std::span<const float> input, std::span<float> output, int root) override;
  void barrier() override;
  void reduce(std::span<float> data, ReduceOp op, int root) override;
  void all_reduce(std::span<float> data, ReduceOp op) override;
  void all_gather(std::span<const float> input, std::span<float> output) override;
  void reduce_scatter(std::span<const float> input, std::span<float> output, ReduceOp op) override;
  void all_to_all(std::span<const float> input, std::span<float> output) override;
  WorkPtr all_reduce_async(std::span<float> data, ReduceOp op) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace course
