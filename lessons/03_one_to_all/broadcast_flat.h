// broadcast_flat.h: lesson 03: broadcast, the first way: the root sends to everyone.
//
//            root
//       /   /    \   \          round 1: root -> r1
//     r1   r2    r3   r4        round 2: root -> r2   ... one send per round,
//                               round N-1: root -> r(N-1)   all from the root
//
// COST (alpha: per-message latency, beta: seconds per byte, n: bytes):
//   (N - 1) * (alpha + n * beta)
// The root's link carries N-1 copies while every other link idles. broadcast_binomial_tree.h
// does the same job in ceil(log2 N) rounds.
//
// PROTOCOL. The root p2p_sends data to ranks 0..N-1 (skipping itself), one after the
// other, with tag tags::kBroadcast; every other rank p2p_recvs once from the root. It
// cannot deadlock: the root's only wait is for a receiver that is already receiving.
#pragma once

#include <span>

#include "tcp_comm.h"

namespace course {

/// Copies the root's `data` into `data` on every rank.
/// REQUIRES: the same root (0 <= root < N, else ConfigError) and the same data.size() on
/// every rank (else ProtocolError at the receiver that differs).
void broadcast_flat(TcpComm& comm, std::span<float> data, int root);

}  // namespace course
