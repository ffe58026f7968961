// reductions.h: lesson 04 as a whole: the collectives that combine or exchange every
// rank's data, and how they enter the tcp backend.
//
//   reduce_op.h               element-wise SUM, PRODUCT, MIN, MAX, AVG
//   reduce_binomial_tree.h    reduce up a binomial tree to the root
//   all_reduce_naive.h        reduce to rank 0, then broadcast
//   all_gather_naive.h        gather to rank 0, then broadcast
//   reduce_scatter_naive.h    reduce to rank 0, then scatter
//   all_to_all_direct.h       every rank exchanges a block with every other, all at once
//
// The "naive" ones all funnel through rank 0: correct, simple, and slow for large
// buffers; lesson 05 replaces all_reduce with the bandwidth-optimal ring.
#pragma once

#include "all_gather_naive.h"
#include "all_reduce_naive.h"
#include "all_to_all_direct.h"
#include "one_to_all.h"
#include "reduce_binomial_tree.h"
#include "reduce_op.h"
#include "reduce_scatter_naive.h"

namespace course {

/// Installs lessons 02 and 03 (install_lesson03), then lesson 04: reduce, all_reduce
/// (naive), all_gather, reduce_scatter, all_to_all.
void install_lesson04(TcpAlgorithms& algorithms);

}  // namespace course
