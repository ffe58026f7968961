// all_to_all_direct.h: lesson 04: all_to_all: rank r's block j goes to rank j's block r
// (a transpose of the N x N matrix of blocks, one row per rank).
//
//   before (row = a rank's input)       after (row = a rank's output)
//   r0: [ a0 a1 a2 ]                    r0: [ a0 b0 c0 ]
//   r1: [ b0 b1 b2 ]                    r1: [ a1 b1 c1 ]
//   r2: [ c0 c1 c2 ]                    r2: [ a2 b2 c2 ]
//
// "Direct": every rank posts all of its N-1 receives and N-1 sends at once (p2p_irecv,
// p2p_isend), keeps its own block, then waits for all of them. Rank r sends in the order
// r+1, r+2, ... (mod N), so at any moment the ranks are sending to different peers
// rather than all queueing at rank 0.
//
// COST: (N - 1)(alpha + k beta) per rank if the links work in parallel (they share the
// loopback here, and one machine's memory bandwidth).
//
// PROTOCOL. Exactly one message per ordered pair of ranks, tag tags::kAllToAll. It cannot
// deadlock: nothing waits until everything is posted, and each of the 2(N-1) transfers
// runs on its own peer channel, so every send finds its receive already posted.
#pragma once

#include <span>

#include "tcp_comm.h"

namespace course {

/// Rank r's output block j (k elements) receives rank j's input block r.
/// REQUIRES: input.size() == output.size() == N * k (else ConfigError); the same size on
/// every rank (else ProtocolError); input and output do not overlap (else ConfigError).
void all_to_all_direct(TcpComm& comm, std::span<const float> input, std::span<float> output);

}  // namespace course
