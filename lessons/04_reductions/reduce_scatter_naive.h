// reduce_scatter_naive.h: lesson 04: reduce_scatter, the naive way: reduce the whole
// buffer to a root, then scatter its blocks.
//
//   input on every rank:   [ b0 | b1 | b2 | b3 ]      N blocks of k elements
//   output on rank r:      op over all ranks of their block r
//
//   step 1: reduce_binomial_tree of a copy of input to root 0    ceil(log2 N)(alpha + N k beta)
//   step 2: scatter_flat of the result from root 0               (N - 1)(alpha + k beta)
//
// Reduce-scatter is the first half of lesson 05's ring all-reduce, where it costs only
// (N - 1)(alpha + k beta) per rank.
//
// PROTOCOL: the two steps in order, on every rank. It cannot deadlock because neither can.
#pragma once

#include <span>

#include "process_group.h"
#include "tcp_comm.h"

namespace course {

/// Rank r's `output` (k elements) becomes the reduction (op), over every rank, of block r
/// of that rank's `input` (N*k elements).
/// REQUIRES: input.size() == N * output.size() (else ConfigError); the same op and sizes
/// on every rank (else ProtocolError). In place: output may be this rank's block of input.
void reduce_scatter_naive(TcpComm& comm, std::span<const float> input, std::span<float> output,
                          ReduceOp op);

}  // namespace course
