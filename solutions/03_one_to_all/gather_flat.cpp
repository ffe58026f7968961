// gather_flat.cpp: lesson 03: every rank sends its block to the root (see gather_flat.h).
#include "gather_flat.h"

#include <algorithm>

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void gather_flat(TcpComm& comm, std::span<const float> input, std::span<float> output, int root) {
  check_rooted_blocks("gather", "the root's output", output.size(), "input", input.size(), root,
                      comm.rank(), comm.size());
  const size_t k = input.size();
  // BEGIN SOLUTION: root: recv block j from rank j, copy its own; others: send input
  if (comm.rank() == root) {
    for (int peer = 0; peer < comm.size(); ++peer) {
      if (peer != root) p2p_recv(comm, output.subspan(peer * k, k), peer, tags::kGather);
    }
    const std::span<float> mine = output.subspan(root * k, k);
    if (mine.data() != input.data()) std::copy(input.begin(), input.end(), mine.begin());
  } else {
    p2p_send(comm, input, root, tags::kGather);
  }
  // END SOLUTION
}

}  // namespace course
