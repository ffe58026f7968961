// gather_flat.h: lesson 03: gather: every rank's input lands, in rank order, at the root.
//
//   input on:       r0   r1   r2   r3           k elements each
//                    |    |    |    |
//                    v    v    v    v
//   root's output: [ r0 | r1 | r2 | r3 ]        block r = rank r's input
//
// COST: (N - 1) * (alpha + k * beta) at the root (its link receives every block but its own).
//
// PROTOCOL. Every rank but the root p2p_sends its input to the root, tag tags::kGather;
// the root p2p_recvs from ranks 0..N-1 in rank order into block r. It cannot deadlock: a
// sender blocked on a large block waits for the root, which reaches it after finishing
// the lower ranks; nobody waits on the sender.
#pragma once

#include <span>

#include "tcp_comm.h"

namespace course {

/// The root's `output` (N*k elements) receives rank r's `input` (k elements) in block r.
/// REQUIRES: the same root on every rank; at the root, output.size() == N * input.size()
/// (else ConfigError); input.size() the same on every rank (else ProtocolError at the
/// root). output is ignored on other ranks (it may be empty). In place: at the root,
/// input may be its own block of output.
void gather_flat(TcpComm& comm, std::span<const float> input, std::span<float> output, int root);

}  // namespace course
