// tcp_comm.h: what the course's own `tcp` backend is made of, and what lesson code gets.
//
// A TcpComm is the full mesh of lesson 01 plus, for every peer, two SerialExecutors, one
// per direction of the socket:
//
//            rank 0                                   rank 1
//   send_channel(1) ── worker or caller ──> socket ──> recv_channel(0)
//   recv_channel(1) <── worker or caller ── socket <── send_channel(0)
//
// Lesson code (lessons 02-05, on the learner's side) receives a TcpComm& and moves bytes:
//   comm.socket(peer)        the connection to peer (send_all / recv_all of socket.h)
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
// Thread safety: socket(), the channels, abort() and aborted() may be called from any
// thread. A socket is used only from inside its channel's operations (one writer and one
// reader at a time, as socket.h requires).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mesh.h"
#include "serial_executor.h"

namespace course {

/// The mesh, per-peer ordered channels and the abort-on-first-error policy the tcp
/// backend's algorithms run on (see the top of this file).
class TcpComm {
 public:
  /// Takes the mesh of lesson 01 (connect_full_mesh). `timeout` bounds every socket call.
  explicit TcpComm(Mesh mesh, Millis timeout = default_timeout());
  /// Destroying a comm with operations still pending aborts it first, so they fail
  /// instead of blocking the destructor (their Works then rethrow the abort).
  ~TcpComm();
  TcpComm(const TcpComm&) = delete;
  TcpComm& operator=(const TcpComm&) = delete;

  /// This rank.
  int rank() const { return mesh_.rank; }
  /// The number of ranks.
  int size() const { return mesh_.world; }
  /// The bound on every socket call.
  Millis timeout() const { return timeout_; }
  /// Changes the bound on later socket calls.
  void set_timeout(Millis timeout) { timeout_ = timeout; }

  /// The connection to `peer`. Throws ConfigError when peer is out of range or this rank,
  /// NetworkError when the comm has been aborted.
  Socket& socket(int peer);
  /// The ordered channels of `peer`'s socket (see above). Throw as socket() does.
  SerialExecutor& send_channel(int peer);
  /// The channel that orders receives from `peer`. Throws as socket() does.
  SerialExecutor& recv_channel(int peer);

  /// Shuts down every connection and records `reason` (only the first reason is kept).
  /// Idempotent; never blocks; safe from any thread, including a channel's worker.
  void abort(const std::string& reason);
  /// True once abort() has been called. Never blocks.
  bool aborted() const { return aborted_.load(); }
  /// Throws NetworkError "this tcp comm was aborted after an earlier error: <reason>".
  void check_not_aborted() const;

 private:
  Mesh mesh_;
  Millis timeout_;
  std::vector<std::unique_ptr<SerialExecutor>> send_channels_;
  std::vector<std::unique_ptr<SerialExecutor>> recv_channels_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex reason_mutex_;
  std::string reason_;
};

}  // namespace course
