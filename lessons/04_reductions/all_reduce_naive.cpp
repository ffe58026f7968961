// all_reduce_naive.cpp: lesson 04: reduce to rank 0, then broadcast from it
// (see all_reduce_naive.h).
#include "all_reduce_naive.h"

#include "broadcast_binomial_tree.h"
#include "reduce_binomial_tree.h"

namespace course {

void all_reduce_naive(TcpComm& comm, std::span<float> data, ReduceOp op) {
  // TODO(lesson04): reduce_binomial_tree to root 0, then broadcast_binomial_tree from root 0
  COURSE_TODO();
}

}  // namespace course
