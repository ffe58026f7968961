// barrier_dissemination.h: lesson 03: barrier: nobody leaves before everybody has arrived.
//
// The dissemination barrier (Hensgen, Finkel and Manber, 1988): in round k every rank
// sends an empty message to rank (r + 2^k) % N and waits for one from (r - 2^k) % N.
// After round k a rank has heard, directly or through a chain, from the 2^(k+1) ranks
// behind it, so after ceil(log2 N) rounds it has heard from all N. N = 5:
//
//   round 0 (distance 1):  0->1  1->2  2->3  3->4  4->0
//   round 1 (distance 2):  0->2  1->3  2->4  3->0  4->1
//   round 2 (distance 4):  0->4  1->0  2->1  3->2  4->3
//
// COST: ceil(log2 N) * alpha (the messages carry no payload; a barrier is pure latency).
//
// PROTOCOL. Each round: p2p_send a zero-element message, then p2p_recv one, tag
// tags::kBarrier. It cannot deadlock: a 16-byte message always fits in the socket buffer,
// so every send returns without waiting for its receiver. The sources of the rounds,
// r - 2^k, are all different ranks, so in-order matching never confuses two rounds; and
// two barriers in a row stay apart because each peer's messages arrive in order.
#pragma once

#include "tcp_comm.h"

namespace course {

/// Returns once every rank of the comm has called barrier_dissemination.
void barrier_dissemination(TcpComm& comm);

}  // namespace course
