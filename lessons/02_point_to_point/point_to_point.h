// point_to_point.h: lesson 02, part 2: send and receive between two ranks, blocking and not.
//
//   p2p_send(comm, data, dst, tag)    returns when data has left (its buffer is reusable)
//   p2p_recv(comm, data, src, tag)    returns when data holds the message
//   p2p_isend / p2p_irecv             return at once with a Work; the transfer runs on the
//                                     peer's channel thread; wait() before touching data
//
// THE PING-PONG:              rank 0: t = 0; t += 1; send(t -> 1); recv(t <- 1)  => t == 3
//                             rank 1: recv(t <- 0); t += 2; send(t -> 0)
//
// WHY isend EXISTS. A blocking send returns once its bytes are in the kernel's send
// buffer. When two ranks both send a message larger than the buffers (a few MiB on
// loopback) before either receives, each send waits for a receive that the other rank
// will only post after its own send returns: a deadlock.
//
//   rank 0: send(64 MiB -> 1) ....blocked: rank 1 is not reading....
//   rank 1: send(64 MiB -> 0) ....blocked: rank 0 is not reading....
//
// With isend, the send runs on the send channel's thread while this thread goes on to
// recv, so both directions of the full-duplex socket drain at once:
//
//   rank 0: w = isend(64 MiB -> 1); recv(64 MiB <- 1); w->wait();
//   rank 1: w = isend(64 MiB -> 0); recv(64 MiB <- 0); w->wait();
//
// ORDER. Operations on one peer and direction run one at a time in the order they were
// issued, blocking or not (tcp_comm.h's channels): a p2p_send after a p2p_isend to the
// same rank waits for the isend to finish first. Receives are matched in order too
// (message.h): the k-th receive from a rank gets the k-th message it sent to us.
//
// CONTRACT (all four)
//   REQUIRES: src/dst is a rank of comm other than comm.rank() (else ConfigError).
//   REQUIRES: the receiver's data.size() equals the sender's (else ProtocolError at the
//             receiver, naming both sizes and both ranks), and the tags are equal.
//   isend/irecv: data must stay alive and untouched until the Work's wait() returns
//   (process_group.h, rule 2). wait() rethrows the transfer's error.
//   Errors abort the comm (tcp_comm.h): a peer blocked on us fails instead of hanging.
//
// What this is not: a matching engine with an unexpected-message queue (see message.h).
#pragma once

#include <span>

#include "message.h"
#include "process_group_tcp.h"
#include "tags.h"
#include "tcp_comm.h"
#include "work.h"

namespace course {

/// Sends data to rank dst as one message; blocks on this thread (no thread hand-off).
void p2p_send(TcpComm& comm, std::span<const float> data, int dst, int tag = 0);

/// Receives the next message from rank src into data; blocks on this thread.
void p2p_recv(TcpComm& comm, std::span<float> data, int src, int tag = 0);

/// Queues the send on dst's send channel and returns at once.
WorkPtr p2p_isend(TcpComm& comm, std::span<const float> data, int dst, int tag = 0);

/// Queues the receive on src's receive channel and returns at once.
WorkPtr p2p_irecv(TcpComm& comm, std::span<float> data, int src, int tag = 0);

/// Puts lesson 02 into the tcp backend: send, recv, isend, irecv.
void install_lesson02(TcpAlgorithms& algorithms);

}  // namespace course
