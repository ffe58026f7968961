// broadcast_binomial_tree.cpp: lesson 03: broadcast down a binomial tree
// (see broadcast_binomial_tree.h for the picture).
#include "broadcast_binomial_tree.h"

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void broadcast_binomial_tree(TcpComm& comm, std::span<float> data, int root) {
  check_root("broadcast", root, comm.size());
  const int n = comm.size();
  [[maybe_unused]] const int v = (comm.rank() - root + n) % n;  // my rank relative to the root
  // TODO(lesson03): recv from parent v - lowbit(v); send to v + 2^k < N, 2^k < lowbit(v)
  COURSE_TODO();
}

}  // namespace course
