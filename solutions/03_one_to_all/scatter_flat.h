// scatter_flat.h: lesson 03: scatter: the root hands block r of its input to rank r.
//
//   root's input:  [ b0 | b1 | b2 | b3 ]        k elements per block, N blocks
//                     |    |    |    |
//                     v    v    v    v
//   output on:      r0   r1   r2   r3           rank r's output = block r
//
// COST: (N - 1) * (alpha + k * beta) at the root (its link sends every block but its own).
//
// PROTOCOL. The root p2p_sends block j to rank j for j = 0..N-1 (skipping itself, whose
// block it copies), tag tags::kScatter; every other rank p2p_recvs its block from the
// root. It cannot deadlock: the root waits only on ranks that are already receiving.
#pragma once

#include <span>

#include "tcp_comm.h"

namespace course {

/// Rank r's `output` (k elements) receives elements [r*k, r*k + k) of the root's `input`.
/// REQUIRES: the same root on every rank; at the root, input.size() == N * output.size()
/// (else ConfigError); output.size() the same on every rank (else ProtocolError). input
/// is ignored on other ranks. In place: at the root, output may be its own block of input.
void scatter_flat(TcpComm& comm, std::span<const float> input, std::span<float> output, int root);

}  // namespace course
