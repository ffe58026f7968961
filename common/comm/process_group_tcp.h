// process_group_tcp.h: the `tcp` backend, the course's own process group, built from the
// learner's lessons.
//
// common/ never includes lesson code, so the backend is a seam: TcpProcessGroup owns a
// TcpComm (tcp_comm.h) and a table of algorithms, TcpAlgorithms, that the lessons fill:
//
//   TcpAlgorithms algorithms;
//   install_lesson04(algorithms);   // lessons 02, 03 and 04 (each install calls the one
//                                   // before it), from solutions/04_reductions/reductions.h
//   TcpProcessGroup group(connect_full_mesh(store, rank, world, token), algorithms);
//   group.all_reduce(grads, ReduceOp::AVG);   // runs lesson 04's all_reduce_naive
//
// A later lesson overrides an entry (lesson 05 puts its ring in `all_reduce`), so the
// learner's lessons become a working backend, one lesson at a time. An entry nobody has
// installed throws ConfigError naming it.
//
// What the group adds on top of the algorithms:
//  - ORDER. Every call runs after every earlier call of this group has finished, whether
//    it was blocking or async (all_reduce_async runs the installed all_reduce on one
//    worker thread, in FIFO order, or on the thread that waits for it if that thread
//    gets there first: serial_executor.h, invariant 4). So the order of operations on the wire is
//    the order of the calls, the same on every rank as long as every rank calls in the same order
//    (process_group.h, rule 1).
//  - CHECKS the lessons would otherwise repeat: ranks, roots and tags in range, sizes
//    consistent on this rank (see process_group.h's size table). User tags must be >= 0:
//    negative tags are the collectives' own (lesson 02's tags.h).
//  - FAILURE POLICY of tcp_comm.h: the first error aborts the group (every connection
//    shut down, so peers fail fast instead of hanging); every later call throws it.
//  - A MONITOR (optional, collective_monitor.h; make_process_group gives every group one):
//    when a collective fails, the error names the ranks that had not reached it.
//
// What this is not: a place for algorithms. They live in lessons/ and solutions/.
//
// Thread safety: as ProcessGroup (one thread issues calls).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "collective_monitor.h"
#include "process_group.h"
#include "rank_names.h"
#include "serial_executor.h"
#include "tcp_comm.h"

namespace course {

/// The algorithms the tcp backend runs, one entry per ProcessGroup call. Each receives
/// the group's TcpComm and arguments already checked by the group (see above).
struct TcpAlgorithms {
  /// ProcessGroup::send (lesson 02).
  std::function<void(TcpComm&, std::span<const float> data, int dst, int tag)> send;
  /// ProcessGroup::recv (lesson 02).
  std::function<void(TcpComm&, std::span<float> data, int src, int tag)> recv;
  /// ProcessGroup::isend (lesson 02).
  std::function<WorkPtr(TcpComm&, std::span<const float> data, int dst, int tag)> isend;
  /// ProcessGroup::irecv (lesson 02).
  std::function<WorkPtr(TcpComm&, std::span<float> data, int src, int tag)> irecv;

  /// ProcessGroup::broadcast (lesson 03).
  std::function<void(TcpComm&, std::span<float> data, int root)> broadcast;
  /// ProcessGroup::scatter (lesson 03).
  std::function<void(TcpComm&, std::span<const float> input, std::span<float> output, int root)>
      scatter;
  /// ProcessGroup::gather (lesson 03).
  std::function<void(TcpComm&, std::span<const float> input, std::span<float> output, int root)>
      gather;
  /// ProcessGroup::barrier (lesson 03).
  std::function<void(TcpComm&)> barrier;
  /// ProcessGroup::reduce (lesson 04).
  std::function<void(TcpComm&, std::span<float> data, ReduceOp op, int root)> reduce;
  /// ProcessGroup::all_reduce (lesson 04's naive one, lesson 05's ring).
  std::function<void(TcpComm&, std::span<float> data, ReduceOp op)> all_reduce;
  /// ProcessGroup::all_gather (lesson 04).
  std::function<void(TcpComm&, std::span<const float> input, std::span<float> output)> all_gather;
  /// ProcessGroup::reduce_scatter (lesson 04).
  std::function<void(TcpComm&, std::span<const float> input, std::span<float> output, ReduceOp op)>
      reduce_scatter;
  /// ProcessGroup::all_to_all (lesson 04).
  std::function<void(TcpComm&, std::span<const float> input, std::span<float> output)> all_to_all;

  /// Which algorithm fills each entry, for logs and benchmark tables:
  /// names["broadcast"] == "binomial_tree (lesson 03)". Installers keep it up to date.
  std::map<std::string, std::string> names;
};

/// The `tcp` backend: the learner's algorithms (TcpAlgorithms) over a TcpComm, with the
/// order, checks and failure policy described above.
class TcpProcessGroup final : public ProcessGroup {
 public:
  /// `mesh` from lesson 01's connect_full_mesh; `timeout` bounds every socket call;
  /// `monitor`, when given, diagnoses the first collective that fails (see above).
  TcpProcessGroup(Mesh mesh, TcpAlgorithms algorithms, Millis timeout = default_timeout(),
                  std::unique_ptr<CollectiveMonitor> monitor = nullptr);
  /// One stream per rank (transport.h's connect_streams: sockets, shared memory or both);
  /// streams[rank] is null. `monitor` as above; `names`, a subgroup's, names the peers by
  /// their world ranks in errors (rank_names.h; TcpComm).
  TcpProcessGroup(int rank, int world, std::vector<ByteStreamPtr> streams, TcpAlgorithms algorithms,
                  Millis timeout = default_timeout(),
                  std::unique_ptr<CollectiveMonitor> monitor = nullptr, RankNames names = {});
  /// Waits for pending async work; if some is still pending (a peer is missing) the group
  /// is aborted first so that the destructor cannot hang.
  ~TcpProcessGroup() override;
  TcpProcessGroup(const TcpProcessGroup&) = delete;
  TcpProcessGroup& operator=(const TcpProcessGroup&) = delete;

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  std::string backend() const override { return "tcp"; }

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
  WorkPtr reduce_scatter_async(std::span<const float> input, std::span<float> output,
                               ReduceOp op) override;
  WorkPtr all_gather_async(std::span<const float> input, std::span<float> output) override;

  /// The comm underneath (its timeout, its abort state) and the installed algorithms.
  TcpComm& comm() { return comm_; }
  /// The installed algorithms (names says which fills each entry).
  const TcpAlgorithms& algorithms() const { return algorithms_; }

 private:
  /// Runs `call` after every earlier call of this group has finished; an error aborts
  /// the comm. Throws ConfigError naming `entry` when !entry_installed.
  void run(const char* entry, bool entry_installed, const std::function<void()>& call);

  /// `call`, counted as a collective by the monitor (when there is one): its first error
  /// aborts the comm, then comes back with the monitor's diagnosis.
  std::function<void()> monitored(const char* entry, std::function<void()> call);

  /// `call` queued behind every earlier call (the async collectives), monitored; its Work
  /// runs it on the waiting thread if the queue has not reached it (run_on_wait).
  WorkPtr submit(const char* entry, bool entry_installed, std::function<void()> call,
                 const std::string& what);

  TcpComm comm_;
  TcpAlgorithms algorithms_;
  std::unique_ptr<CollectiveMonitor> monitor_;
  SerialExecutor calls_;  // declared last: destroyed (joined) before comm_
};

}  // namespace course
