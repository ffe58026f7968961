// reduce_binomial_tree.h: lesson 04: reduce: the root gets the element-wise reduction of
// every rank's buffer, up the same binomial tree that lesson 03's broadcast goes down.
//
// With v = (rank - root + N) % N, rank v folds in the partial results of its children
// v + 1, v + 2, v + 4, ... (while below lowbit(v) and N), in that order, then sends its
// own partial result to its parent v - lowbit(v). N = 8 (v ranks):
//
//   round 1:  1 -> 0     3 -> 2     5 -> 4     7 -> 6      the tree, children in the
//   round 2:  2 -> 0                6 -> 4                 order they are served:
//   round 3:  4 -> 0
//                                                          0
//   "a -> b": a sends its partial result,                  +-- 1
//   and b combines it into its own                         +-- 2
//                                                          |   +-- 3
//                                                          +-- 4
//                                                              +-- 5
//                                                              +-- 6
//                                                                  +-- 7
//
// COST: ceil(log2 N) * (alpha + n * beta + n * gamma), gamma: seconds per byte combined.
//
// PROTOCOL. In round k (mask = 2^k): if bit k of v is set, send the partial result to
// v - mask and stop; otherwise, if v + mask < N, receive that child's partial result and
// combine it (reduce_op_apply). Tag tags::kReduce. It cannot deadlock: a rank sends only
// to its parent, which by then is receiving from exactly this child (children are served
// in a fixed order, and a child that is not yet due waits in its blocked send: nobody
// waits on it).
//
// AVG: combined as SUM on the way up; the root divides by N once (reduce_op_finish).
#pragma once

#include <span>

#include "process_group.h"
#include "tcp_comm.h"

namespace course {

/// At the root, data becomes the reduction (op) of every rank's data. On every other
/// rank data is left unchanged (the partial results live in scratch buffers).
/// REQUIRES: the same root (0 <= root < N, else ConfigError), op and data.size() on every
/// rank (a different size: ProtocolError where it is received).
void reduce_binomial_tree(TcpComm& comm, std::span<float> data, ReduceOp op, int root);

}  // namespace course
