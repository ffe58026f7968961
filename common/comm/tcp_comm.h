// tcp_comm.h: what the course's own `tcp` backend is made of, and what lesson code gets.
//
// A TcpComm is one byte stream per peer (byte_stream.h: the sockets of lesson 01's full
// mesh, or lesson 12's shared-memory channels for ranks on one machine) plus, for every
// peer, two SerialExecutors, one per direction of the stream:
//
//            rank 0                                   rank 1
//   send_channel(1) ── worker or caller ──> stream ──> recv_channel(0)
//   recv_channel(1) <── worker or caller ── stream <── send_channel(0)
//
// Lesson code (lessons 02-05, on the learner's side) receives a TcpComm& and moves bytes:
//   comm.stream(peer)        the connection to peer (send_all / recv_all of byte_stream.h)
//   comm.send_channel(peer)  runs the operations that write to that socket, in order
//   comm.recv_channel(peer)  runs the operations that read from it, in order
// Two channels per peer make each connection full duplex: an isend to rank 1 and a recv
// from rank 1 progress at the same time, which is what keeps two ranks that both send a
// large message first from deadlocking (lesson 02's README).
//
// FAILURE POLICY: the first error in any channel operation aborts the comm. Every
// connection is shut down, so a peer blocked on this rank fails at once (and aborts in
// turn) instead of sitting out its timeout; every later call on this comm, and every
// operation the shutdown cut short, throws NetworkError naming that first error. An
// aborted comm stays aborted: make a new one.
// This is what NCCL does with a communicator after an error, and why a mismatched count
// on one rank gives every rank an error rather than a hang.
//
// What this is not: the algorithms. Lessons 02-05 write them against this, and
// process_group_tcp.h turns comm + algorithms into a ProcessGroup.
//
// The name stays "tcp" for the backend the course builds; what carries each peer's bytes
// is the stream's business (stream(peer).kind(): "tcp" or "shm").
//
// Thread safety: stream(), the channels, abort() and aborted() may be called from any
// thread. A stream is used only from inside its channel's operations (one writer and one
// reader at a time, as byte_stream.h requires).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "byte_stream.h"
#include "mesh.h"
#include "rank_names.h"
#include "serial_executor.h"

namespace course {

/// The mesh, per-peer ordered channels and the abort-on-first-error policy the tcp
/// backend's algorithms run on (see the top of this file).
class TcpComm {
 public:
  /// Takes the mesh of lesson 01 (connect_full_mesh). `timeout` bounds every socket call.
  explicit TcpComm(Mesh mesh, Millis timeout = default_timeout());
  /// Takes one stream per rank: streams[j] connects to rank j, streams[rank] is null.
  /// `names` says how errors name the peers: a subgroup's (rank_names.h) renames every
  /// stream by its peer's world rank; the world's default leaves the streams' names as
  /// they are.
  TcpComm(int rank, int world, std::vector<ByteStreamPtr> streams,
          Millis timeout = default_timeout(), RankNames names = {});
  /// Destroying a comm with operations still pending aborts it first, so they fail
  /// instead of blocking the destructor (their Works then rethrow the abort).
  ~TcpComm();
  TcpComm(const TcpComm&) = delete;
  TcpComm& operator=(const TcpComm&) = delete;

  /// This rank.
  int rank() const { return rank_; }
  /// The number of ranks.
  int size() const { return world_; }
  /// How errors name this comm's ranks (rank_names.h).
  const RankNames& names() const { return names_; }
  /// The bound on every stream call.
  Millis timeout() const { return timeout_; }
  /// Changes the bound on later stream calls.
  void set_timeout(Millis timeout) { timeout_ = timeout; }

  /// The connection to `peer`. Throws ConfigError when peer is out of range or this rank,
  /// NetworkError when the comm has been aborted.
  ByteStream& stream(int peer);
  /// The channel that orders sends to `peer` (see above). Throws as stream() does.
  SerialExecutor& send_channel(int peer);
  /// The channel that orders receives from `peer`. Throws as stream() does.
  SerialExecutor& recv_channel(int peer);

  /// Shuts down every stream and records `reason` (only the first reason is kept).
  /// Idempotent; never blocks; safe from any thread, including a channel's worker.
  void abort(const std::string& reason);
  /// True once abort() has been called. Never blocks.
  bool aborted() const { return aborted_.load(); }
  /// Throws NetworkError "this tcp comm was aborted after an earlier error: <reason>".
  void check_not_aborted() const;

 private:
  void make_channels();

  int rank_;
  int world_;
  std::vector<ByteStreamPtr> streams_;
  Millis timeout_;
  RankNames names_;
  std::vector<std::unique_ptr<SerialExecutor>> send_channels_;
  std::vector<std::unique_ptr<SerialExecutor>> recv_channels_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex reason_mutex_;
  std::string reason_;
};

}  // namespace course
