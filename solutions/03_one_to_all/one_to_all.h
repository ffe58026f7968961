// one_to_all.h: lesson 03 as a whole: the one-to-all collectives and how they enter the
// tcp backend.
//
//   broadcast_flat.h            root sends to everyone:          (N-1)(alpha + n beta)
//   broadcast_binomial_tree.h   holders double every round:      ceil(log2 N)(alpha + n beta)
//   scatter_flat.h              root sends block r to rank r:    (N-1)(alpha + k beta)
//   gather_flat.h               rank r sends its block to root:  (N-1)(alpha + k beta)
//   barrier_dissemination.h     ceil(log2 N) rounds of empty messages
//
// Every one of them is built from lesson 02's p2p_send/p2p_recv, with its own negative tag
// (tags.h), so that two ranks calling collectives in different orders get an error naming
// both collectives rather than each other's data.
#pragma once

#include "barrier_dissemination.h"
#include "broadcast_binomial_tree.h"
#include "broadcast_flat.h"
#include "gather_flat.h"
#include "point_to_point.h"
#include "scatter_flat.h"

namespace course {

/// Installs lesson 02 (install_lesson02), then lesson 03: broadcast (the binomial tree),
/// scatter, gather and barrier.
void install_lesson03(TcpAlgorithms& algorithms);

}  // namespace course
