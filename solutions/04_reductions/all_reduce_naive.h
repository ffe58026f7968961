// all_reduce_naive.h: lesson 04: all_reduce, the naive way: reduce to a root, then
// broadcast the result back out.
//
//   r0 r1 r2 r3              r0 r1 r2 r3
//    \  \ /  /    reduce      ^  ^  ^  ^     broadcast
//     \  v  /   ---------->    \ | /  /    (binomial trees both ways,
//      root 0                   root 0       lessons 03 and 04)
//
// Every rank ends with the same bits: the root's result is what is broadcast.
//
// COST: 2 * ceil(log2 N) * (alpha + n * beta) + ceil(log2 N) * n * gamma.
// Every round moves the whole buffer, and the root's link carries it 2 * log2 N times,
// while the best possible for large n is about 2 * n * beta in all (each rank sends and
// receives 2 (N-1)/N of the buffer once). Lesson 05's ring gets there.
//
// PROTOCOL: reduce_binomial_tree to root 0, then broadcast_binomial_tree from root 0.
// It cannot deadlock because neither half can (see their headers), and every rank runs
// them in the same order.
#pragma once

#include <span>

#include "process_group.h"
#include "tcp_comm.h"

namespace course {

/// Every rank's data becomes the reduction (op) of every rank's data, identical on every
/// rank. REQUIRES: the same op and data.size() on every rank (else ProtocolError).
void all_reduce_naive(TcpComm& comm, std::span<float> data, ReduceOp op);

}  // namespace course
