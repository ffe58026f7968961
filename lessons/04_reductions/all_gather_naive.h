// all_gather_naive.h: lesson 04: all_gather, the naive way: gather at a root, then
// broadcast the whole gathered buffer.
//
//   input on:   r0   r1   r2   r3
//   output on every rank:  [ r0 | r1 | r2 | r3 ]     block r = rank r's input
//
//   step 1: gather_flat to root 0           (N - 1)(alpha + k beta)
//   step 2: broadcast_binomial_tree from 0  ceil(log2 N)(alpha + N k beta)
//
// The root's link carries the whole N*k buffer log2 N times; lesson 05's ring all-gather
// moves (N-1)*k per rank instead.
//
// PROTOCOL: the two steps in order, on every rank. It cannot deadlock because neither can.
#pragma once

#include <span>

#include "tcp_comm.h"

namespace course {

/// Every rank's `output` (N*k elements) receives rank r's `input` (k elements) in block r.
/// REQUIRES: output.size() == N * input.size() (else ConfigError); input.size() the same
/// on every rank (else ProtocolError). In place: input may be this rank's block of output.
void all_gather_naive(TcpComm& comm, std::span<const float> input, std::span<float> output);

}  // namespace course
