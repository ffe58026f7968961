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
  const int v = (comm.rank() - root + n) % n;  // my rank relative to the root
  // BEGIN SOLUTION: fold in children v + 2^k until bit k of v is set; then send up
  const auto real = [&](int relative) { return (relative + root) % n; };
  // The root reduces straight into data. Any other rank with children works on a copy,
  // so that its caller's data is left as it was.
  std::span<float> partial = data;
  std::vector<float> scratch;
  std::vector<float> incoming;
  for (int mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      p2p_send(comm, partial, real(v - mask), tags::kReduce);
      break;
    }
    if (v + mask >= n) continue;  // this child does not exist (N not a power of two)
    if (v != 0 && scratch.empty() && !data.empty()) {
      scratch.assign(data.begin(), data.end());
      partial = scratch;
    }
    incoming.resize(data.size());
    p2p_recv(comm, incoming, real(v + mask), tags::kReduce);
    reduce_op_apply(op, partial, incoming);
  }
  if (v == 0) reduce_op_finish(op, data, n);
  // END SOLUTION
}

}  // namespace course
