// reduce_binomial_tree.cpp: lesson 04: reduce up a binomial tree
// (see reduce_binomial_tree.h for the picture).
#include "reduce_binomial_tree.h"

#include <vector>

#include "collective_checks.h"
#include "point_to_point.h"
#include "reduce_op.h"

namespace course {

void reduce_binomial_tree(TcpComm& comm, std::span<float> data, ReduceOp op, int root) {
  check_root("reduce", root, comm.size());
  const int n = comm.size();
  [[maybe_unused]] const int v = (comm.rank() - root + n) % n;  // my rank relative to the root
  // TODO(lesson04): fold in children v + 2^k until bit k of v is set; then send up
  COURSE_TODO();
}

}  // namespace course
