// broadcast_binomial_tree.h: lesson 03: broadcast, the second way: everyone who has the
// data passes it on, so the number of ranks holding it doubles every round.
//
// Ranks are renumbered relative to the root, v = (rank - root + N) % N, so the tree is
// always rooted at v = 0. Rank v gets the data from its parent v - lowbit(v) (lowbit: the
// lowest set bit of v) and sends it to its children v + 2^k for every 2^k < lowbit(v),
// largest first. For N = 8 (v ranks):
//
//   round 1:  0 -------------------> 4                   the tree, children in the
//   round 2:  0 --------> 2          4 --------> 6         order they are served:
//   round 3:  0 -> 1     2 -> 3     4 -> 5     6 -> 7
//                                                          0
//                                                          +-- 4
//                                                          |   +-- 6
//                                                          |   |   +-- 7
//                                                          |   +-- 5
//                                                          +-- 2
//                                                          |   +-- 3
//                                                          +-- 1
// N = 6 is the same tree with v = 6 and 7 missing (a child >= N is skipped).
//
// COST: ceil(log2 N) * (alpha + n * beta): fewer rounds than flat's N - 1, but every
// round still moves the whole buffer (lesson 05's ring fixes that for large n).
//
// PROTOCOL. Every rank but the root p2p_recvs once, from its parent, then p2p_sends to
// its children in order; tag tags::kBroadcast. It cannot deadlock: a send waits only on a
// child that has nothing else to do but receive from this parent, and the parent of every
// rank is closer to the root, so the waits form a tree, never a cycle.
//
// Note: the MPI literature (MPICH's MPIR_Bcast_binomial) builds this same tree.
#pragma once

#include <span>

#include "tcp_comm.h"

namespace course {

/// Copies the root's `data` into `data` on every rank, in ceil(log2 N) rounds.
/// REQUIRES: as broadcast_flat.
void broadcast_binomial_tree(TcpComm& comm, std::span<float> data, int root);

}  // namespace course
