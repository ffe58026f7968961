// all_reduce_naive.cpp: lesson 04: reduce to rank 0, then broadcast from it
// (see all_reduce_naive.h).
#include "all_reduce_naive.h"

#include "broadcast_binomial_tree.h"
#include "reduce_binomial_tree.h"

namespace course {

void all_reduce_naive(TcpComm& comm, std::span<float> data, ReduceOp op) {
  // BEGIN SOLUTION: reduce_binomial_tree to root 0, then broadcast_binomial_tree from root 0
  reduce_binomial_tree(comm, data, op, /*root=*/0);
  broadcast_binomial_tree(comm, data, /*root=*/0);
  // END SOLUTION
}

}  // namespace course
